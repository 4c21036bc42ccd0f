-- likes_settle.lua: SettleLikes, for one post. Told what SQL has after a
-- write of like events, it takes each event's pending move back out of
-- the counter and puts SQL's newer tally in, so that the counter is
-- always a tally plus the moves SQL does not have yet. A counter loaded
-- from SQL while events were on their way (Redis lost the keys with
-- their moves) therefore ends exact once they land: their moves are not
-- pending, and the tally that holds them is newer than the loaded one.
--
-- KEYS[1] the counter; KEYS[2] the marks; KEYS[3] the pending moves;
-- KEYS[4] the tally (a hash: seq, count). ARGV[1] the tally's seq (-1:
-- none given); ARGV[2] its count; ARGV[3] the counter's ttl in ms;
-- ARGV[4] the marks' memory in µs; ARGV[5] the pending limit in µs; then
-- per event, user, version, delta. Returns 1 if the counter is kept, 0
-- if there is none, -1 if it was dropped: without a tally, or with a
-- move pending past the limit (a settle that never came), nothing says
-- what it holds, and the next read loads it from SQL.
--
-- A script because the counter, its tally and its pending moves change
-- together: a move or another writer's settle in between would be lost
-- or counted twice.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cached = redis.call('EXISTS', KEYS[1]) == 1
for i = 6, #ARGV, 3 do
  local user, version = ARGV[i], ARGV[i + 1]
  if redis.call('ZREM', KEYS[3], user .. ':' .. version) == 1 and cached then
    redis.call('DECRBY', KEYS[1], ARGV[i + 2])
  end
  -- Settled is moved: a late move of the change (its repair) must not
  -- count it again.
  local s = redis.call('ZSCORE', KEYS[2], user)
  if not s or tonumber(s) < tonumber(version) then
    redis.call('ZADD', KEYS[2], version, user)
    redis.call('PEXPIRE', KEYS[2], math.floor(tonumber(ARGV[4]) / 1000) + 1)
  end
end
if not cached then
  redis.call('DEL', KEYS[3], KEYS[4])
  return 0
end
local b = redis.call('HMGET', KEYS[4], 'seq', 'count')
local late = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%.0f', now - tonumber(ARGV[5])), 'LIMIT', 0, 1)
if not b[1] or #late > 0 then
  redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
  return -1
end
if tonumber(ARGV[1]) > tonumber(b[1]) then
  redis.call('INCRBY', KEYS[1], tonumber(ARGV[2]) - tonumber(b[2]))
  redis.call('HSET', KEYS[4], 'seq', ARGV[1], 'count', ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 1
