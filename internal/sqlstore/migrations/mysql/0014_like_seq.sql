-- like_seq counts the writes that moved a post's like_count, so that two
-- reads of the count can be ordered (counts alone cannot: unlikes lower
-- them). The cache's counter is such a read plus the likes on their way
-- to SQL, and takes a newer read in when a write lands (SettleLikes).
ALTER TABLE post_stats ADD COLUMN IF NOT EXISTS like_seq BIGINT NOT NULL DEFAULT 0;
