-- See the MySQL migration of the same number: NULL is the default rule,
-- "following", and a nullable column without a default rewrites no row.
ALTER TABLE users ADD COLUMN home_replies SMALLINT;
