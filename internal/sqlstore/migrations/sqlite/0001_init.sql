-- The first schema of feedd on SQLite, the same tables and indexes as on
-- MySQL (see migrations/mysql). Times are unix milliseconds. The migration
-- runs in one transaction.

CREATE TABLE IF NOT EXISTS users (
    id              INTEGER NOT NULL PRIMARY KEY,
    name            TEXT    NOT NULL,
    follower_count  INTEGER NOT NULL DEFAULT 0,
    following_count INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS posts (
    id         INTEGER NOT NULL PRIMARY KEY,
    author_id  INTEGER NOT NULL,
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
);

-- Covering for id listings, as on MySQL.
CREATE INDEX IF NOT EXISTS posts_author ON posts (author_id, id, deleted_at);

-- WITHOUT ROWID: the primary key is the table, no second b-tree.
CREATE TABLE IF NOT EXISTS follows (
    follower_id INTEGER NOT NULL,
    followee_id INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (follower_id, followee_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS follows_followee ON follows (followee_id, follower_id);

-- AUTOINCREMENT: an outbox id is never reused after a purge, so it can
-- name an event downstream.
CREATE TABLE IF NOT EXISTS outbox (
    id         INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    payload    BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at    INTEGER
);

CREATE INDEX IF NOT EXISTS outbox_sent ON outbox (sent_at, id);

CREATE TABLE IF NOT EXISTS idempotency (
    author_id  INTEGER NOT NULL,
    idem_key   TEXT    NOT NULL,
    post_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (author_id, idem_key)
) WITHOUT ROWID;
