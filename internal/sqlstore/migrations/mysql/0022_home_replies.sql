-- A reader's rule for replies in its home feed (feed.HomeReplies: 1 all,
-- 2 none). NULL is the default, "following": a nullable column without a
-- default is instant on InnoDB and rewrites no row.
ALTER TABLE users ADD COLUMN home_replies SMALLINT NULL;
