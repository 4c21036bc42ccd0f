-- See the MySQL migration of the same number.
ALTER TABLE idempotency ADD COLUMN fingerprint BYTEA;
ALTER TABLE idempotency ADD COLUMN expires_at BIGINT  NOT NULL DEFAULT 0;

UPDATE idempotency SET expires_at = created_at + 86400000
    WHERE created_at > CAST(EXTRACT(EPOCH FROM now()) AS BIGINT) * 1000 - 86400000;

CREATE INDEX IF NOT EXISTS idempotency_expires ON idempotency (expires_at);
