-- See the MySQL migration of the same number: a repost names its original
-- and the original's author; repost_count is exact on the original's
-- shard; reposts is a user's reposts, reposted a post's, hidden_reposts
-- the followees whose reposts a reader hides.
ALTER TABLE posts ADD COLUMN repost_of_id BIGINT;
ALTER TABLE posts ADD COLUMN repost_of_author_id BIGINT;
ALTER TABLE posts ADD COLUMN repost_count BIGINT NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS reposts (
    user_id   BIGINT NOT NULL,
    post_id   BIGINT NOT NULL,
    repost_id BIGINT NOT NULL,
    PRIMARY KEY (user_id, post_id)
);

CREATE TABLE IF NOT EXISTS reposted (
    post_id   BIGINT NOT NULL,
    repost_id BIGINT NOT NULL,
    user_id   BIGINT NOT NULL,
    PRIMARY KEY (post_id, repost_id)
);
CREATE INDEX IF NOT EXISTS reposted_by_user ON reposted (user_id);

CREATE TABLE IF NOT EXISTS hidden_reposts (
    user_id   BIGINT NOT NULL,
    target_id BIGINT NOT NULL,
    PRIMARY KEY (user_id, target_id)
);
