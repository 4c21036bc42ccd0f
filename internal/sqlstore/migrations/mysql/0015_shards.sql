-- shard_identity says which logical shard a database is (shard of shards;
-- 0 of 1 for an unsharded database), written once by the first migration
-- run with a shard map: a process whose map places another shard here
-- refuses to start instead of writing users where no reader looks.
CREATE TABLE IF NOT EXISTS shard_identity (
    one        SMALLINT NOT NULL,
    shard      INT      NOT NULL,
    shards     INT      NOT NULL,
    created_at BIGINT   NOT NULL,
    PRIMARY KEY (one)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- shard_syncs is the journal of a sharded write whose other half lives on
-- another shard (a follow's edge in the followee's follower list, a
-- block's copy on the blocked user's shard, a like's copy on the liker's
-- shard). The row commits with the write; the process that made the write
-- syncs the other half at once and deletes the row, and every work process
-- sweeps the rows left behind by a process or a server that died (due_at
-- passed). A sync reads the truth anew, so running one twice is harmless.
CREATE TABLE IF NOT EXISTS shard_syncs (
    kind   SMALLINT NOT NULL,
    a      BIGINT   NOT NULL,
    b      BIGINT   NOT NULL,
    due_at BIGINT   NOT NULL,
    PRIMARY KEY (kind, a, b),
    KEY shard_syncs_due (due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
