-- Replies (docs/replies.md). A reply is a post on its author's shard that
-- names the post it answers and that post's author (NULL on a post that
-- answers none: a nullable column without a default is instant on InnoDB
-- and rewrites no row). reply_count is a post's live direct replies,
-- moved on the post's own shard in the transaction that adds or removes
-- the replies row, so that it stays exact (a default constant is instant
-- too, from MariaDB 10.3).
ALTER TABLE posts ADD COLUMN in_reply_to_id BIGINT NULL;
ALTER TABLE posts ADD COLUMN in_reply_to_author_id BIGINT NULL;
ALTER TABLE posts ADD COLUMN reply_count BIGINT NOT NULL DEFAULT 0;

-- replies is the index of a post's live direct replies, on the parent's
-- shard: the replies page reads it by (parent_id, reply_id), oldest
-- first; an account's purge finds its replies by author_id. On a sharded
-- database a reply of another shard's user is a mirror row, synced from
-- the reply's post through the journal (shard_syncs, kind 6).
CREATE TABLE IF NOT EXISTS replies (
    parent_id BIGINT NOT NULL,
    reply_id  BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    PRIMARY KEY (parent_id, reply_id),
    KEY replies_by_author (author_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
