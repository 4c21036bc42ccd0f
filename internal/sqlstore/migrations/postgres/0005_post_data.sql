-- See the MySQL migration of the same number. This one runs in one
-- transaction.
ALTER TABLE posts ADD COLUMN data TEXT;
ALTER TABLE posts ADD COLUMN edited_at BIGINT ;
