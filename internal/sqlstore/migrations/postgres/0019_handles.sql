-- See the MySQL migration of the same number. COLLATE "C" compares byte
-- for byte, so that the code's ranges are the index's.
ALTER TABLE users ADD COLUMN handle VARCHAR(30) COLLATE "C";
ALTER TABLE users ADD COLUMN name_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
UPDATE users SET name_key = LOWER(name);
CREATE UNIQUE INDEX IF NOT EXISTS users_handle ON users (handle);
CREATE INDEX IF NOT EXISTS users_name_key ON users (name_key, id);

CREATE TABLE IF NOT EXISTS handles (
    handle     VARCHAR(30) COLLATE "C" NOT NULL,
    user_id    BIGINT NOT NULL,
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (handle)
);
