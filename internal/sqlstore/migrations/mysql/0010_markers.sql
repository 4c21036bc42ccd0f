-- A reader's read position in its home feed: the id of the newest post it
-- has read. It only moves forward (SetMarker), so that two devices racing
-- cannot move it back. One row per reader who ever set one.
CREATE TABLE IF NOT EXISTS markers (
    user_id      BIGINT NOT NULL,
    last_read_id BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
