-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS likes (
    user_id INTEGER NOT NULL,
    post_id INTEGER NOT NULL,
    liked   INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (user_id, post_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS likes_user ON likes (user_id, version, liked);
CREATE INDEX IF NOT EXISTS likes_post ON likes (post_id, liked, version, user_id);

CREATE TABLE IF NOT EXISTS post_stats (
    post_id    INTEGER NOT NULL PRIMARY KEY,
    like_count INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
);
