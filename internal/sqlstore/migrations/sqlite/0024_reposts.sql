-- See the MySQL migration of the same number: a repost names its original
-- and the original's author; repost_count is exact on the original's
-- shard; reposts is a user's reposts, reposted a post's, hidden_reposts
-- the followees whose reposts a reader hides.
ALTER TABLE posts ADD COLUMN repost_of_id INTEGER;
ALTER TABLE posts ADD COLUMN repost_of_author_id INTEGER;
ALTER TABLE posts ADD COLUMN repost_count INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS reposts (
    user_id   INTEGER NOT NULL,
    post_id   INTEGER NOT NULL,
    repost_id INTEGER NOT NULL,
    PRIMARY KEY (user_id, post_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS reposted (
    post_id   INTEGER NOT NULL,
    repost_id INTEGER NOT NULL,
    user_id   INTEGER NOT NULL,
    PRIMARY KEY (post_id, repost_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reposted_by_user ON reposted (user_id);

CREATE TABLE IF NOT EXISTS hidden_reposts (
    user_id   INTEGER NOT NULL,
    target_id INTEGER NOT NULL,
    PRIMARY KEY (user_id, target_id)
) WITHOUT ROWID;
