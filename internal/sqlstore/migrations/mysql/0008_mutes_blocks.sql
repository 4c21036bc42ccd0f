-- Mutes and blocks: one row per (user, target). Both tables are keyed by
-- their owner, so a reader's whole set (what its feed filters out) is one
-- primary-key range read. blocks_blocked serves the other direction: who
-- blocks a user, which that user must not see either.
CREATE TABLE IF NOT EXISTS mutes (
    user_id    BIGINT NOT NULL,
    target_id  BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, target_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS blocks (
    blocker_id BIGINT NOT NULL,
    blocked_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (blocker_id, blocked_id),
    KEY blocks_blocked (blocked_id, blocker_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
