-- A post's external id: the application's own id for it, unique per
-- author, so that a retried create or an import run twice finds the post
-- it made before instead of making another. NULL for posts without one
-- (InnoDB's unique index holds any number of NULLs), so the change costs
-- nothing for them. VARBINARY, as the idempotency key, so that ids are
-- compared byte for byte: a VARCHAR's collation would make "Blog-1" and
-- "blog-1 " the same id. 255 bytes is feed.MaxExternalIDBytes. One
-- statement, so an interrupted migration leaves the column and its index
-- or neither.
ALTER TABLE posts ADD COLUMN external_id VARBINARY(255) NULL,
    ADD UNIQUE KEY posts_external (author_id, external_id);
