-- The first schema of feedd on MySQL / MariaDB.
--
-- Deliberately plain so that it also runs on distributed MySQL-compatible
-- databases: no foreign keys, triggers or stored procedures; the code keeps
-- the invariants. Times are unix milliseconds, ids are 64-bit integers the
-- application generates (see feed.IDGen), except the outbox's, which only
-- orders the outbox. Every statement is idempotent (IF NOT EXISTS) because
-- MySQL DDL is not transactional: a migration interrupted halfway is simply
-- run again.

CREATE TABLE IF NOT EXISTS users (
    id              BIGINT       NOT NULL,
    name            VARCHAR(255) NOT NULL,
    follower_count  BIGINT       NOT NULL DEFAULT 0,
    following_count BIGINT       NOT NULL DEFAULT 0,
    created_at      BIGINT       NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- posts_author serves an author's posts newest first and, for each followed
-- author, the home feed's join; deleted_at makes it covering, so listing ids
-- never touches the rows.
CREATE TABLE IF NOT EXISTS posts (
    id         BIGINT NOT NULL,
    author_id  BIGINT NOT NULL,
    content    TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT NULL,
    PRIMARY KEY (id),
    KEY posts_author (author_id, id, deleted_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The primary key pages whom a user follows, follows_followee pages a user's
-- followers; both by keyset.
CREATE TABLE IF NOT EXISTS follows (
    follower_id BIGINT NOT NULL,
    followee_id BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (follower_id, followee_id),
    KEY follows_followee (followee_id, follower_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- outbox_sent finds the unsent rows (sent_at IS NULL) in id order, and the
-- rows to purge (sent_at below a time), with one index.
CREATE TABLE IF NOT EXISTS outbox (
    id         BIGINT NOT NULL AUTO_INCREMENT,
    payload    BLOB   NOT NULL,
    created_at BIGINT NOT NULL,
    sent_at    BIGINT NULL,
    PRIMARY KEY (id),
    KEY outbox_sent (sent_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- idem_key is up to 255 characters of UTF-8, compared byte for byte:
-- "Key", "key" and "key " are three requests. VARBINARY because a VARCHAR
-- even with utf8mb4_bin ignores trailing spaces (PAD SPACE).
CREATE TABLE IF NOT EXISTS idempotency (
    author_id  BIGINT          NOT NULL,
    idem_key   VARBINARY(1020) NOT NULL,
    post_id    BIGINT       NOT NULL,
    created_at BIGINT       NOT NULL,
    PRIMARY KEY (author_id, idem_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
