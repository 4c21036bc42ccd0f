-- See the MySQL migration of the same number.
ALTER TABLE posts ADD COLUMN in_reply_to_id INTEGER;
ALTER TABLE posts ADD COLUMN in_reply_to_author_id INTEGER;
ALTER TABLE posts ADD COLUMN reply_count INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS replies (
    parent_id INTEGER NOT NULL,
    reply_id  INTEGER NOT NULL,
    author_id INTEGER NOT NULL,
    PRIMARY KEY (parent_id, reply_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS replies_by_author ON replies (author_id);
