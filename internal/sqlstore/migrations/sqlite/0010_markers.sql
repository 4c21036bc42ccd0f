-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS markers (
    user_id      INTEGER NOT NULL PRIMARY KEY,
    last_read_id INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
