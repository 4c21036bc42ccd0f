-- Likes (issue 4, note 002 "V2.0").
--
-- likes holds each user's latest action on each post: liked = 1 for a
-- like, 0 for an unlike (a tombstone, kept so that a like redelivered
-- late cannot resurrect what a newer unlike removed), version = the
-- action's time in microseconds, strictly increasing per user. The
-- primary key is (user_id, post_id): the table is clustered, keyed and
-- written by user_id, so it splits by user_id across databases (see the
-- README), and the unique pair is what makes the batch writer idempotent.
-- No auto-increment id: nothing would ever look a like up by it, and a
-- sharded table would need a global generator for it.
--
-- likes_user serves a user's likes newest first and the rebuild of the
-- user's recent set; likes_post serves a post's likers newest first (on
-- a sharded deployment it becomes its own table keyed by post_id).
CREATE TABLE IF NOT EXISTS likes (
    user_id BIGINT  NOT NULL,
    post_id BIGINT  NOT NULL,
    liked   TINYINT NOT NULL,
    version BIGINT  NOT NULL,
    PRIMARY KEY (user_id, post_id),
    KEY likes_user (user_id, version, liked),
    KEY likes_post (post_id, liked, version, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per liked post: the truth of its like count, moved by the batch
-- writer by the number of likes rows that actually changed.
CREATE TABLE IF NOT EXISTS post_stats (
    post_id    BIGINT NOT NULL,
    like_count BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (post_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
