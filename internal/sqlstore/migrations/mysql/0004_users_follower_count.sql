-- The authors near or above FEEDD_PULL_THRESHOLD, found without a scan:
-- a hybrid reader's pulled followees are those of them the reader
-- follows (PullFollowees), a primary-key lookup each, where the join from
-- the reader's follows cost one per followee (5,000 for a reader following
-- 5,000). It costs every follow and unfollow one more index change.
CREATE INDEX users_follower_count ON users (follower_count);
