-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS shard_identity (
    one        SMALLINT NOT NULL PRIMARY KEY,
    shard      INT      NOT NULL,
    shards     INT      NOT NULL,
    created_at BIGINT   NOT NULL
);

CREATE TABLE IF NOT EXISTS shard_syncs (
    kind   SMALLINT NOT NULL,
    a      BIGINT   NOT NULL,
    b      BIGINT   NOT NULL,
    due_at BIGINT   NOT NULL,
    PRIMARY KEY (kind, a, b)
);
CREATE INDEX IF NOT EXISTS shard_syncs_due ON shard_syncs (due_at);
