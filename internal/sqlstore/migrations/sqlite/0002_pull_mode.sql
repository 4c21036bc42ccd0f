-- See the MySQL migration of the same number.
ALTER TABLE users ADD COLUMN pull_mode INTEGER NOT NULL DEFAULT 0;
