-- A post's weight in ranked feeds (feed.Weight, 0..100), set by the
-- application. NULL is the default weight, 1: adding a nullable column
-- without a default is instant on InnoDB and rewrites no row, and a post
-- written by a version before weights existed ranks as one with none.
ALTER TABLE posts ADD COLUMN weight DOUBLE NULL;
