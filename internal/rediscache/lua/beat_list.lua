-- beat_list.lua: Beats. Returns the live heartbeats of the deployment's
-- heartbeat hash and deletes the ones whose deadline has passed.
--
-- KEYS[1] the hash. No ARGV. Returns a flat list: field, body, field,
-- body…
--
-- A script so that the deadlines are read against the same clock that
-- beat_put.lua wrote them with: the server's.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local v = all[i + 1]
  local sp = string.find(v, ' ', 1, true)
  local deadline = sp and tonumber(string.sub(v, 1, sp - 1))
  if deadline and deadline > now then
    out[#out + 1] = all[i]
    out[#out + 1] = string.sub(v, sp + 1)
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return out
