-- See the MySQL migration of the same number. SQLite compares text byte
-- for byte by default. Its LOWER folds ASCII only: names of users created
-- before this migration with capitals beyond ASCII are found by their
-- lower-case ASCII letters only, until their name is changed.
ALTER TABLE users ADD COLUMN handle TEXT NULL;
ALTER TABLE users ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
UPDATE users SET name_key = LOWER(name);
CREATE UNIQUE INDEX IF NOT EXISTS users_handle ON users (handle);
CREATE INDEX IF NOT EXISTS users_name_key ON users (name_key, id);

CREATE TABLE IF NOT EXISTS handles (
    handle     TEXT    NOT NULL PRIMARY KEY,
    user_id    INTEGER NOT NULL,
    claimed_at INTEGER NOT NULL
) WITHOUT ROWID;
