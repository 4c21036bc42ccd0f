-- See the MySQL migration of the same number: a reply names its parent and
-- the parent's author; reply_count is exact on the parent's shard; replies
-- is the index of a post's live direct replies, on the parent's shard.
ALTER TABLE posts ADD COLUMN in_reply_to_id BIGINT;
ALTER TABLE posts ADD COLUMN in_reply_to_author_id BIGINT;
ALTER TABLE posts ADD COLUMN reply_count BIGINT NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS replies (
    parent_id BIGINT NOT NULL,
    reply_id  BIGINT NOT NULL,
    author_id BIGINT NOT NULL,
    PRIMARY KEY (parent_id, reply_id)
);
CREATE INDEX IF NOT EXISTS replies_by_author ON replies (author_id);
