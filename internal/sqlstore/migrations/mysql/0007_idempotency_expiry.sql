-- Idempotency keys that keep their promise: each key records the
-- fingerprint of its first request (SHA-256 of the canonical body), so
-- that a repeat with another body is refused instead of answered with the
-- first post, and when it expires (fixed when the key is first used), so
-- that an expired key counts as new and the work role can purge keys in
-- small batches along idempotency_expires.
--
-- Keys written before this migration have no fingerprint (NULL): until
-- they expire they replay as before, for any body. Those younger than the
-- default TTL (24 h) keep 24 h from their first use; older ones expire at
-- once (expires_at 0) and are purged.
ALTER TABLE idempotency
    ADD COLUMN fingerprint VARBINARY(32) NULL,
    ADD COLUMN expires_at  BIGINT NOT NULL DEFAULT 0,
    ADD INDEX idempotency_expires (expires_at);

UPDATE idempotency SET expires_at = created_at + 86400000
    WHERE created_at > UNIX_TIMESTAMP() * 1000 - 86400000;
