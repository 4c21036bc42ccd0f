-- shard_moves is the state of a move of this database (a logical shard)
-- to another server (feedd shards move): copying while the shard serves,
-- fenced while its last changes are copied (every write here then fails,
-- SQLSTATE FD001), moved once the copy at moved_to is the shard (writes
-- here still fail, and every process that reads this row switches there),
-- or aborted. No row: the shard has never moved. The move's triggers and
-- its change table (shard_changes) are made when a move starts, not here:
-- a shard that is not moving pays nothing for them.
CREATE TABLE IF NOT EXISTS shard_moves (
    one        SMALLINT      NOT NULL,
    state      VARCHAR(16)   NOT NULL,
    moved_to   VARCHAR(1024) NOT NULL DEFAULT '',
    updated_at BIGINT        NOT NULL,
    PRIMARY KEY (one)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
