-- likes_fill_count.lua: FillLikeCounts, for one post. Caches a counter
-- loaded from SQL, unless one exists: a concurrent fill or move got there
-- first. The counter starts as the tally, with nothing pending.
--
-- KEYS[1] the counter; KEYS[2] the pending moves; KEYS[3] the tally.
-- ARGV[1] the count; ARGV[2] the tally's seq; ARGV[3] the ttl in ms (0:
-- none).
-- Returns 1 if it cached the counter, else 0.
--
-- A script because the check and the three writes must be one step.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[3], 'seq', ARGV[2], 'count', ARGV[1])
if tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return 1
