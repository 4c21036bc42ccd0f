-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS shard_identity (
    one        INTEGER NOT NULL PRIMARY KEY,
    shard      INTEGER NOT NULL,
    shards     INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS shard_syncs (
    kind   INTEGER NOT NULL,
    a      INTEGER NOT NULL,
    b      INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    PRIMARY KEY (kind, a, b)
);
CREATE INDEX IF NOT EXISTS shard_syncs_due ON shard_syncs (due_at);
