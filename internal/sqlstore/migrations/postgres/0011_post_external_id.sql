-- See the MySQL migration of the same number. TEXT compares byte for byte
-- (equality under a deterministic collation is byte equality), and a unique index holds any number of
-- NULLs. This one runs in one transaction.
ALTER TABLE posts ADD COLUMN external_id TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS posts_external ON posts (author_id, external_id);
