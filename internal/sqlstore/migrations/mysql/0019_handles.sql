-- Handles and finding people. users.handle is the user's handle, lower
-- case (feed.CheckHandle), NULL for none; its unique key makes it unique
-- on one database whatever the case, and serves a handle's prefix as a
-- range. users.name_key is the name in lower case (feed.NameKey), so that
-- a name search is a range of users_name_key. Both compare byte for byte
-- (the _bin collations): the ranges the code computes are ranges of bytes.
-- One ALTER: the columns and their keys come together or not at all.
ALTER TABLE users
    ADD COLUMN handle VARCHAR(30) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD COLUMN name_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
    ADD UNIQUE KEY users_handle (handle),
    ADD KEY users_name_key (name_key, id);

UPDATE users SET name_key = LOWER(name);

-- Sharded, a handle is unique across shards through its row here, on the
-- shard of a hash of the handle (shards.Store; docs/clusters.md): it
-- names the user that claimed it, since claimed_at (unix ms). One
-- database leaves the table empty: users_handle suffices.
CREATE TABLE IF NOT EXISTS handles (
    handle     VARCHAR(30) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    user_id    BIGINT NOT NULL,
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (handle)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
