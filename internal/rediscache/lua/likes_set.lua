-- likes_set.lua: SetLiked. Decides a like or an unlike on the user's
-- recent set (likes.go describes its keys): finds the pair's current
-- state — in the set, else "not liked" if the post is newer than the
-- set's window start w (plus the clock skew allowed), else the cold state
-- the caller read from SQL — and, if it differs from the one asked for,
-- records the action with a new version (the server's time in µs, above
-- every score in the set and the pair's own version) and trims the set to
-- the window, moving w up to the newest version trimmed. A call that
-- decides renews the set's ttl, and journals the change in the user's
-- journal (field: the post's member, value: the version) until
-- FinishLike clears it.
--
-- KEYS[1] the user's set; KEYS[2] the user's journal. ARGV[1] the post's member (likes.go's
-- likeMember); ARGV[2] want: 1 like, 0 unlike;
-- ARGV[3] the post's time in µs; ARGV[4] the clock skew in µs; ARGV[5]
-- the window; ARGV[6] the ttl in ms; ARGV[7] '1' if a cold state is
-- given, else '0'; ARGV[8] the cold state's liked (1/0); ARGV[9] its
-- version. Returns {outcome, version, prev liked, prev version,
-- prev unfinished (1/0)}, outcome as feed.LikeOutcome: 0 unchanged, 1
-- changed, 2 cold (call again with SQL's state), 3 absent (fill the set
-- from SQL).
--
-- A script because the decision reads the set and writes it: two likes
-- of one user racing must not both see the old state; and the journal
-- entry must exist as soon as the decision does, or a process dying in
-- between would leave a like no retry finishes.

local key = KEYS[1]
local p = ARGV[1]
local np = '-' .. p
local w = redis.call('ZSCORE', key, 'w')
if not w then
  return {3, 0, 0, 0, 0}
end
local cur, curV = nil, 0
local s = redis.call('ZSCORE', key, p)
if s then
  cur, curV = 1, tonumber(s)
else
  s = redis.call('ZSCORE', key, np)
  if s then
    cur, curV = 0, tonumber(s)
  end
end
if not cur then
  if tonumber(ARGV[3]) > tonumber(w) + tonumber(ARGV[4]) then
    cur = 0
  elseif ARGV[7] == '1' then
    cur, curV = tonumber(ARGV[8]), tonumber(ARGV[9])
  else
    return {2, 0, 0, 0, 0}
  end
end
redis.call('PEXPIRE', key, ARGV[6])
local jkey = KEYS[2]
local unfinished = 0
if curV > 0 then
  local j = redis.call('HGET', jkey, p)
  if j and tonumber(j) == curV then
    unfinished = 1
  end
end
local want = tonumber(ARGV[2])
if cur == want then
  return {0, curV, cur, curV, unfinished}
end
local t = redis.call('TIME')
local v = tonumber(t[1]) * 1000000 + tonumber(t[2])
local top = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
if #top == 2 and tonumber(top[2]) >= v then
  v = tonumber(top[2]) + 1
end
if curV >= v then
  v = curV + 1
end
if want == 1 then
  redis.call('ZREM', key, np)
  redis.call('ZADD', key, v, p)
else
  redis.call('ZREM', key, p)
  redis.call('ZADD', key, v, np)
end
local window = tonumber(ARGV[5])
local n = redis.call('ZCARD', key) - 1
if n > window then
  redis.call('ZREM', key, 'w')
  local gone = redis.call('ZRANGE', key, 0, n - window - 1, 'WITHSCORES')
  redis.call('ZREMRANGEBYRANK', key, 0, n - window - 1)
  local nw = tonumber(w)
  local last = tonumber(gone[#gone])
  if last > nw then
    nw = last
  end
  redis.call('ZADD', key, nw, 'w')
end
redis.call('HSET', jkey, p, string.format('%.0f', v))
redis.call('PEXPIRE', jkey, ARGV[6])
return {1, v, cur, curV, unfinished}
