-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS stale_feeds (
    user_id INTEGER NOT NULL PRIMARY KEY,
    mark    INTEGER NOT NULL
);
