-- See the MySQL migration of the same number.
ALTER TABLE users ADD COLUMN pull_mode SMALLINT NOT NULL DEFAULT 0;
