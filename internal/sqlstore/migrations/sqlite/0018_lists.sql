-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS lists (
    owner_id     INTEGER NOT NULL,
    id           INTEGER NOT NULL,
    name         TEXT    NOT NULL,
    replies      TEXT    NOT NULL,
    exclusive    INTEGER NOT NULL,
    member_count INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    last_read_id INTEGER NOT NULL DEFAULT 0,
    marker_at    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (owner_id, id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS list_members (
    owner_id   INTEGER NOT NULL,
    list_id    INTEGER NOT NULL,
    member_id  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, list_id, member_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS list_members_member ON list_members (owner_id, member_id);
