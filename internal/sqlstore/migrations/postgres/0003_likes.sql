-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS likes (
    user_id BIGINT  NOT NULL,
    post_id BIGINT  NOT NULL,
    liked   SMALLINT NOT NULL,
    version BIGINT  NOT NULL,
    PRIMARY KEY (user_id, post_id)
);

CREATE INDEX IF NOT EXISTS likes_user ON likes (user_id, version, liked);
CREATE INDEX IF NOT EXISTS likes_post ON likes (post_id, liked, version, user_id);

CREATE TABLE IF NOT EXISTS post_stats (
    post_id    BIGINT  NOT NULL PRIMARY KEY,
    like_count BIGINT  NOT NULL DEFAULT 0,
    updated_at BIGINT  NOT NULL
);
