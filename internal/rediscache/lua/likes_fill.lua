-- likes_fill.lua: FillUserLikes. Creates a user's recent set from SQL's
-- newest actions, unless it exists: a concurrent fill or action wrote a
-- newer state.
--
-- KEYS[1] the user's set. ARGV[1] the ttl in ms; ARGV[2] the window start
-- w; then score, member pairs: version, "<post>" or "-<post>". Returns 1
-- if it created the set, 0 if the set existed.
--
-- A script because the existence check and the writes must be one step,
-- and a set of a thousand actions is written in a few ZADDs of 250 pairs
-- (Lua's unpack has a limit on its arguments).

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], 'w')
for i = 3, #ARGV, 500 do
  redis.call('ZADD', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
