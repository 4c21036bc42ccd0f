-- See the MySQL migration of the same number.
CREATE INDEX users_follower_count ON users (follower_count);
