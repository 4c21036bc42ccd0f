-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS notice_groups (
    recipient_id BIGINT      NOT NULL,
    gid          BIGINT      NOT NULL,
    id           BIGINT      NOT NULL,
    kind         VARCHAR(16) NOT NULL,
    post_id      BIGINT      NOT NULL,
    first_at     BIGINT      NOT NULL,
    latest_at    BIGINT      NOT NULL,
    actor_count  BIGINT      NOT NULL,
    PRIMARY KEY (recipient_id, gid)
);
CREATE INDEX IF NOT EXISTS notice_groups_page ON notice_groups (recipient_id, id);
CREATE INDEX IF NOT EXISTS notice_groups_open ON notice_groups (recipient_id, kind, post_id, gid);

CREATE TABLE IF NOT EXISTS notice_actors (
    recipient_id BIGINT      NOT NULL,
    kind         VARCHAR(16) NOT NULL,
    post_id      BIGINT      NOT NULL,
    actor_id     BIGINT      NOT NULL,
    gid          BIGINT      NOT NULL,
    id           BIGINT      NOT NULL,
    PRIMARY KEY (recipient_id, kind, post_id, actor_id)
);
CREATE INDEX IF NOT EXISTS notice_actors_newest ON notice_actors (recipient_id, gid, id);
CREATE INDEX IF NOT EXISTS notice_actors_by_actor ON notice_actors (actor_id, recipient_id, gid);

CREATE TABLE IF NOT EXISTS notice_markers (
    user_id      BIGINT NOT NULL PRIMARY KEY,
    last_read_id BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
