-- See the MySQL migration of the same number.
ALTER TABLE users ADD COLUMN deleted_at BIGINT  NULL;

CREATE TABLE IF NOT EXISTS user_purges (
    user_id           BIGINT  NOT NULL PRIMARY KEY,
    requested_at      BIGINT  NOT NULL,
    finished_at       BIGINT  NULL,
    token_generation  BIGINT  NOT NULL,
    lease_owner       TEXT    NOT NULL DEFAULT '',
    lease_until       BIGINT  NOT NULL DEFAULT 0,
    batches           BIGINT  NOT NULL DEFAULT 0,
    following_removed BIGINT  NOT NULL DEFAULT 0,
    followers_removed BIGINT  NOT NULL DEFAULT 0,
    likes_removed     BIGINT  NOT NULL DEFAULT 0,
    posts_removed     BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS user_purges_open ON user_purges (finished_at, lease_until);
