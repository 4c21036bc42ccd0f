-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS shard_moves (
    one        SMALLINT NOT NULL PRIMARY KEY,
    state      TEXT     NOT NULL,
    moved_to   TEXT     NOT NULL DEFAULT '',
    updated_at BIGINT   NOT NULL
);
