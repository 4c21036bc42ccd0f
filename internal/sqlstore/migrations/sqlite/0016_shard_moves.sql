-- See the MySQL migration of the same number. SQLite is never sharded, so
-- its database never moves; the table keeps the schemas alike.
CREATE TABLE IF NOT EXISTS shard_moves (
    one        INTEGER NOT NULL PRIMARY KEY,
    state      TEXT    NOT NULL,
    moved_to   TEXT    NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL
);
