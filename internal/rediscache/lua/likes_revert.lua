-- likes_revert.lua: RevertLike. Undoes a change whose event could not be
-- published, if the pair still has that change's version and it is
-- still unfinished (a retry that finished it made its event durable): removes the
-- change's member and puts back the state it replaced, if there was one.
--
-- KEYS[1] the user's set; KEYS[2] the user's journal, whose entry of the
-- change goes with it (back to the previous state's, if that was
-- unfinished). ARGV[1] the post's member (likes.go's
-- likeMember); ARGV[2] the change's liked (1/0);
-- ARGV[3] its version; ARGV[4] the previous state's liked (1/0); ARGV[5]
-- its version, 0 for none; ARGV[6] '1' if the previous state was
-- unfinished. Returns 1 if it reverted,
-- 0 if the pair has changed since.
--
-- A script because the checks and the change back must be one step: a
-- newer action in between must not be undone, nor a change a concurrent
-- retry finished.

local key = KEYS[1]
local p = ARGV[1]
local np = '-' .. p
local m = np
if ARGV[2] == '1' then
  m = p
end
local s = redis.call('ZSCORE', key, m)
if not s or tonumber(s) ~= tonumber(ARGV[3]) then
  return 0
end
local j = redis.call('HGET', KEYS[2], p)
if not j or tonumber(j) ~= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZREM', key, m)
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[2], p, ARGV[5])
else
  redis.call('HDEL', KEYS[2], p)
end
if tonumber(ARGV[5]) > 0 then
  if ARGV[4] == '1' then
    redis.call('ZADD', key, ARGV[5], p)
  else
    redis.call('ZADD', key, ARGV[5], np)
  end
end
return 1
