-- See the MySQL migration of the same number.
ALTER TABLE users ADD COLUMN token_generation BIGINT  NOT NULL DEFAULT 0;
