-- See the MySQL migration of the same number.
ALTER TABLE users ADD COLUMN token_generation INTEGER NOT NULL DEFAULT 0;
