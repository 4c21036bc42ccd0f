-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS mutes (
    user_id    INTEGER NOT NULL,
    target_id  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, target_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS blocks (
    blocker_id INTEGER NOT NULL,
    blocked_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (blocker_id, blocked_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS blocks_blocked ON blocks (blocked_id, blocker_id);
