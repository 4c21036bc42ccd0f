-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS stale_feeds (
    user_id BIGINT  NOT NULL PRIMARY KEY,
    mark    BIGINT  NOT NULL
);
