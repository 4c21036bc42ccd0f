-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS markers (
    user_id      BIGINT  NOT NULL PRIMARY KEY,
    last_read_id BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL
);
