-- See the MySQL migration of the same number: NULL is the default weight,
-- 1, and a nullable column without a default rewrites no row.
ALTER TABLE posts ADD COLUMN weight DOUBLE PRECISION;
