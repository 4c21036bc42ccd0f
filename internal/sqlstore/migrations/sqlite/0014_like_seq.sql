-- See the MySQL migration of the same number.
ALTER TABLE post_stats ADD COLUMN like_seq INTEGER NOT NULL DEFAULT 0;
