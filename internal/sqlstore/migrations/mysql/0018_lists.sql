-- Lists: a user's own sets of users to read as feeds of their own. Both
-- tables are keyed by the owner first, so that every list call (always
-- the owner's) is one primary-key range, and a list moves with its
-- owner's shard. list_members_member serves a block's clean-up (the
-- member's rows in the owner's lists) and the exclusive lists' members.
CREATE TABLE IF NOT EXISTS lists (
    owner_id     BIGINT NOT NULL,
    id           BIGINT NOT NULL,
    name         VARCHAR(64) NOT NULL,
    replies      VARCHAR(16) NOT NULL,
    exclusive    BOOLEAN NOT NULL,
    member_count INT NOT NULL,
    created_at   BIGINT NOT NULL,
    -- The list's read marker (0: never set), as markers' for the home feed.
    last_read_id BIGINT NOT NULL DEFAULT 0,
    marker_at    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (owner_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS list_members (
    owner_id   BIGINT NOT NULL,
    list_id    BIGINT NOT NULL,
    member_id  BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner_id, list_id, member_id),
    KEY list_members_member (owner_id, member_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
