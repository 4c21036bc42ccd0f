-- likes_fill_count.lua: FillLikeCounts, for one post. Caches a counter
-- loaded from SQL, unless one exists: a concurrent fill or move got there
-- first. The counter starts as the tally, with nothing pending: the
-- tally given, or a newer one a settle left while there was no counter
-- (this fill read SQL before that write). The tally keeps the load's
-- time, before which a change is not moved (likes_move_count.lua).
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
local count, seq = ARGV[1], ARGV[2]
local kept = redis.call('HMGET', KEYS[3], 'seq', 'count')
if kept[1] and tonumber(kept[1]) > tonumber(seq) then
  count, seq = kept[2], kept[1]
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('SET', KEYS[1], count)
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[3], 'seq', seq, 'count', count, 'at', string.format('%.0f', now))
if tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return 1
