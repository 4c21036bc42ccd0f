-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS mutes (
    user_id    BIGINT  NOT NULL,
    target_id  BIGINT  NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (user_id, target_id)
);

CREATE TABLE IF NOT EXISTS blocks (
    blocker_id BIGINT  NOT NULL,
    blocked_id BIGINT  NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (blocker_id, blocked_id)
);

CREATE INDEX IF NOT EXISTS blocks_blocked ON blocks (blocked_id, blocker_id);
