-- Heartbeats of the processes that read from a replica: each writes its
-- own row (beat: its clock, Unix microseconds) to the primary every 250 ms
-- and reads it back from the replica, which has then applied everything
-- committed before that beat (replica.go).
CREATE TABLE IF NOT EXISTS replica_heartbeats (
    process VARCHAR(64) NOT NULL,
    beat    BIGINT      NOT NULL,
    PRIMARY KEY (process)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
