-- likes_add_count.lua: AddLikeCount. Adds a delta to a post's cached
-- like counter if it exists, and renews its ttl.
--
-- KEYS[1] the counter. ARGV[1] the delta; ARGV[2] the ttl in ms. Returns
-- {1, the new value} if the counter was cached, else {0, 0}.
--
-- A script because INCRBY would create a missing counter at the delta,
-- a wrong count: the caller fills it from SQL instead.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0, 0}
end
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, n}
