-- See the MySQL migration of the same number.
CREATE TABLE IF NOT EXISTS notice_groups (
    recipient_id INTEGER     NOT NULL,
    gid          INTEGER     NOT NULL,
    id           INTEGER     NOT NULL,
    kind         TEXT        NOT NULL,
    post_id      INTEGER     NOT NULL,
    first_at     INTEGER     NOT NULL,
    latest_at    INTEGER     NOT NULL,
    actor_count  INTEGER     NOT NULL,
    PRIMARY KEY (recipient_id, gid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS notice_groups_page ON notice_groups (recipient_id, id);
CREATE INDEX IF NOT EXISTS notice_groups_open ON notice_groups (recipient_id, kind, post_id, gid);

CREATE TABLE IF NOT EXISTS notice_actors (
    recipient_id INTEGER     NOT NULL,
    kind         TEXT        NOT NULL,
    post_id      INTEGER     NOT NULL,
    actor_id     INTEGER     NOT NULL,
    gid          INTEGER     NOT NULL,
    id           INTEGER     NOT NULL,
    PRIMARY KEY (recipient_id, kind, post_id, actor_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS notice_actors_newest ON notice_actors (recipient_id, gid, id);
CREATE INDEX IF NOT EXISTS notice_actors_by_actor ON notice_actors (actor_id, recipient_id, gid);

CREATE TABLE IF NOT EXISTS notice_markers (
    user_id      INTEGER NOT NULL PRIMARY KEY,
    last_read_id INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
