-- likes_move_count.lua: MoveLikeCount. Adds a change's delta to a post's
-- cached like counter once: the post's move marks remember, per user, the
-- version of the newest change moved (or settled), and a change at or
-- below it is not moved again. Marks older than the memory are dropped at
-- each move, so that a hot post keeps only its last minute of likers. A
-- move is pending (the post's pending set, member "<user>:<version>",
-- score the time of the move) until likes_settle.lua says SQL has it.
--
-- KEYS[1] the counter; KEYS[2] the post's marks (a sorted set: member the
-- user, score the version); KEYS[3] the pending moves; KEYS[4] the
-- counter's tally. ARGV[1] the user; ARGV[2] the version; ARGV[3] the
-- delta; ARGV[4] the counter's ttl in ms; ARGV[5] the memory in µs.
-- Returns {1, the value} if the counter is cached, else {0, 0}.
--
-- A script because the mark, the move and its pending entry must be one
-- step: a retry repairing a change and the call that made it, racing,
-- move it once, and a settle never misses a move it should take back.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local s = redis.call('ZSCORE', KEYS[2], ARGV[1])
local moved = s and tonumber(s) >= tonumber(ARGV[2])
if not moved then
  local mem = tonumber(ARGV[5])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.0f', now - mem))
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], math.floor(mem / 1000) + 1)
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0, 0}
end
local n
if moved then
  n = tonumber(redis.call('GET', KEYS[1]))
else
  n = redis.call('INCRBY', KEYS[1], ARGV[3])
  redis.call('ZADD', KEYS[3], string.format('%.0f', now), ARGV[1] .. ':' .. ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
return {1, n}
