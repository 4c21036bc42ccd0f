-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS lists (
    owner_id     BIGINT      NOT NULL,
    id           BIGINT      NOT NULL,
    name         VARCHAR(64) NOT NULL,
    replies      VARCHAR(16) NOT NULL,
    exclusive    BOOLEAN     NOT NULL,
    member_count INT         NOT NULL,
    created_at   BIGINT      NOT NULL,
    last_read_id BIGINT      NOT NULL DEFAULT 0,
    marker_at    BIGINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (owner_id, id)
);

CREATE TABLE IF NOT EXISTS list_members (
    owner_id   BIGINT NOT NULL,
    list_id    BIGINT NOT NULL,
    member_id  BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner_id, list_id, member_id)
);

CREATE INDEX IF NOT EXISTS list_members_member ON list_members (owner_id, member_id);
