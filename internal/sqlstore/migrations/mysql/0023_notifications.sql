-- Grouped notifications (docs/notifications.md), on the recipient's shard.
-- A group is one row with its exact actor count, so a page reads
-- (recipient_id, id) whatever the counts; a group's id is its newest
-- notification's and moves when one joins, gid (its first) never does.
-- An actor row is one fact, keyed so that an actor is in at most one group
-- per (recipient, kind, post): an unlike or unfollow finds it by key, and
-- a like written twice adds nothing. notice_actors_newest gives a group's
-- newest actors in one indexed read; notice_actors_by_actor serves the
-- hidden actors' counts at read and an account's purge.
CREATE TABLE IF NOT EXISTS notice_groups (
    recipient_id BIGINT      NOT NULL,
    gid          BIGINT      NOT NULL,
    id           BIGINT      NOT NULL,
    kind         VARCHAR(16) NOT NULL,
    post_id      BIGINT      NOT NULL,
    first_at     BIGINT      NOT NULL,
    latest_at    BIGINT      NOT NULL,
    actor_count  BIGINT      NOT NULL,
    PRIMARY KEY (recipient_id, gid),
    KEY notice_groups_page (recipient_id, id),
    KEY notice_groups_open (recipient_id, kind, post_id, gid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS notice_actors (
    recipient_id BIGINT      NOT NULL,
    kind         VARCHAR(16) NOT NULL,
    post_id      BIGINT      NOT NULL,
    actor_id     BIGINT      NOT NULL,
    gid          BIGINT      NOT NULL,
    id           BIGINT      NOT NULL,
    PRIMARY KEY (recipient_id, kind, post_id, actor_id),
    KEY notice_actors_newest (recipient_id, gid, id),
    KEY notice_actors_by_actor (actor_id, recipient_id, gid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The notifications' read marker, as markers' for the home feed.
CREATE TABLE IF NOT EXISTS notice_markers (
    user_id      BIGINT NOT NULL PRIMARY KEY,
    last_read_id BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
