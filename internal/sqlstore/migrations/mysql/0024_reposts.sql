-- Reposts (docs/reposts.md). A repost is a post of the reposter's, on the
-- reposter's shard, with no content, that names the post it reposts and
-- that post's author (NULL on a post that reposts none: instant on
-- InnoDB). repost_count is a post's live reposts, moved on the post's own
-- shard in the transaction that adds or removes its reposted row, so that
-- it stays exact.
ALTER TABLE posts ADD COLUMN repost_of_id BIGINT NULL;
ALTER TABLE posts ADD COLUMN repost_of_author_id BIGINT NULL;
ALTER TABLE posts ADD COLUMN repost_count BIGINT NOT NULL DEFAULT 0;

-- reposts is a user's live reposts, on the reposter's shard: one per
-- original (the primary key makes a repost idempotent) and the answer to
-- reposted_by_me, a primary-key read.
CREATE TABLE IF NOT EXISTS reposts (
    user_id   BIGINT NOT NULL,
    post_id   BIGINT NOT NULL,
    repost_id BIGINT NOT NULL,
    PRIMARY KEY (user_id, post_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- reposted is the index of a post's live reposts, on the original's
-- shard, that keeps repost_count exact: on a sharded database a repost of
-- another shard's user is a mirror row, synced from the repost's post
-- through the journal (shard_syncs, kind 7). A purge finds a user's rows
-- by user_id.
CREATE TABLE IF NOT EXISTS reposted (
    post_id   BIGINT NOT NULL,
    repost_id BIGINT NOT NULL,
    user_id   BIGINT NOT NULL,
    PRIMARY KEY (post_id, repost_id),
    KEY reposted_by_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- hidden_reposts are the followees whose reposts a reader keeps out of
-- its home feed (PUT /v1/me/following/{id} {"reposts": false}), on the
-- reader's shard, read with its hidden set.
CREATE TABLE IF NOT EXISTS hidden_reposts (
    user_id   BIGINT NOT NULL,
    target_id BIGINT NOT NULL,
    PRIMARY KEY (user_id, target_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
