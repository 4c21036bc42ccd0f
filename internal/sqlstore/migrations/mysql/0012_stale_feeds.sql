-- Users whose cached feed state (inbox, mute and block set, pulled
-- followees) missed a change because the cache was unreachable when the
-- change was made: the serve processes reset those caches once it answers
-- again, and delete the row. mark counts the misses, so that a sweep
-- deletes only the row it saw, never one a later miss wrote meanwhile.
CREATE TABLE IF NOT EXISTS stale_feeds (
    user_id BIGINT NOT NULL,
    mark    BIGINT NOT NULL,
    PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
