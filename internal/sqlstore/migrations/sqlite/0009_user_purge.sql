-- See the MySQL migration of the same number.
ALTER TABLE users ADD COLUMN deleted_at INTEGER NULL;

CREATE TABLE IF NOT EXISTS user_purges (
    user_id           INTEGER NOT NULL PRIMARY KEY,
    requested_at      INTEGER NOT NULL,
    finished_at       INTEGER NULL,
    token_generation  INTEGER NOT NULL,
    lease_owner       TEXT    NOT NULL DEFAULT '',
    lease_until       INTEGER NOT NULL DEFAULT 0,
    batches           INTEGER NOT NULL DEFAULT 0,
    following_removed INTEGER NOT NULL DEFAULT 0,
    followers_removed INTEGER NOT NULL DEFAULT 0,
    likes_removed     INTEGER NOT NULL DEFAULT 0,
    posts_removed     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS user_purges_open ON user_purges (finished_at, lease_until);
