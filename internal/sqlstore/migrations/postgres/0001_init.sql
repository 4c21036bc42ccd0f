-- The first schema of feedd on PostgreSQL, the same tables, columns and
-- indexes as on MySQL (see migrations/mysql), so that every query reads the
-- same rows and every answer is the same. Times are unix milliseconds, ids
-- 64-bit integers the application generates; flags are SMALLINT 0/1, as
-- MySQL's TINYINT. DDL is transactional here: each migration commits whole
-- with its schema_migrations row.

CREATE TABLE IF NOT EXISTS users (
    id              BIGINT  NOT NULL PRIMARY KEY,
    name            TEXT    NOT NULL,
    follower_count  BIGINT  NOT NULL DEFAULT 0,
    following_count BIGINT  NOT NULL DEFAULT 0,
    created_at      BIGINT  NOT NULL
);

CREATE TABLE IF NOT EXISTS posts (
    id         BIGINT  NOT NULL PRIMARY KEY,
    author_id  BIGINT  NOT NULL,
    content    TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    deleted_at BIGINT
);

-- Covering for id listings, as on MySQL.
CREATE INDEX IF NOT EXISTS posts_author ON posts (author_id, id, deleted_at);

CREATE TABLE IF NOT EXISTS follows (
    follower_id BIGINT  NOT NULL,
    followee_id BIGINT  NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (follower_id, followee_id)
);

CREATE INDEX IF NOT EXISTS follows_followee ON follows (followee_id, follower_id);

-- An identity: an outbox id is never reused after a purge, so it can
-- name an event downstream.
CREATE TABLE IF NOT EXISTS outbox (
    id         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload    BYTEA    NOT NULL,
    created_at BIGINT  NOT NULL,
    sent_at    BIGINT
);

CREATE INDEX IF NOT EXISTS outbox_sent ON outbox (sent_at, id);

CREATE TABLE IF NOT EXISTS idempotency (
    author_id  BIGINT  NOT NULL,
    idem_key   TEXT    NOT NULL,
    post_id    BIGINT  NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (author_id, idem_key)
);
