-- See the MySQL migration of the same number.
ALTER TABLE post_stats ADD COLUMN IF NOT EXISTS like_seq BIGINT NOT NULL DEFAULT 0;
