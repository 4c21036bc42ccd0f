-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS replica_heartbeats (
    process VARCHAR(64) NOT NULL PRIMARY KEY,
    beat    BIGINT      NOT NULL
);
