-- zset_push.lua: the push of the sorted-set inbox layout this package
-- used before the ring, kept for the benchmarks only (legacy_test.go).
-- Adds a post id to an inbox if it exists and trims it to InboxMax,
-- marking it incomplete if it trimmed.
--
-- KEYS[1] the inbox, a sorted set: member and score the post id, and a
-- sentinel member '0' whose score is the state (0 complete, -1 not).
-- ARGV[1] the post id; ARGV[2] -(InboxMax+1). Returns 0 if the inbox is
-- absent, else 1.
--
-- A script because the existence check, the add and the trim must be one
-- step.

local state = redis.call('ZSCORE', KEYS[1], '0')
if not state then
  return 0
end
if redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1]) == 0 then
  return 1
end
if redis.call('ZREMRANGEBYRANK', KEYS[1], 1, ARGV[2]) > 0 and tonumber(state) == 0 then
  redis.call('ZADD', KEYS[1], -1, '0')
end
return 1
