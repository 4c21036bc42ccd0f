-- beat_put.lua: Beat. Stores one process's heartbeat as a field of the
-- deployment's one heartbeat hash, stamped with when it runs out.
--
-- KEYS[1] the hash. ARGV[1] the field (the process); ARGV[2] the body;
-- ARGV[3] the ttl in ms. Returns 1.
--
-- A script because Redis 7.0 has no expiry per hash field (HPEXPIRE came
-- in 7.4): the value carries its own deadline, "<unix ms> <body>", taken
-- from the server's clock (TIME) so that the processes' clocks need not
-- agree. The hash itself lives as long as its freshest field, so it goes
-- when the whole deployment stops.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], (now + ttl) .. ' ' .. ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
