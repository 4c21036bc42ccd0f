-- inbox_open.lua: the start of the scripts on one inbox, KEYS[1] its ring
-- and KEYS[2] its pending list. It follows ring.lua: it loads the ring and
-- reads the pending list into pending, and ends the script with nil
-- (absent) when either is missing. A ring without its list (evicted alone,
-- or left by an older version) has missed pushes, so it is not to be
-- trusted: the caller rebuilds the inbox from SQL.
--
-- It comes before ring_read.lua, so that a script on an absent inbox ends
-- before it pays for the helpers' closures.

load(KEYS[1])
if version ~= FORMAT then
  return false
end
local pending = redis.call('LRANGE', KEYS[2], 0, -1)
if #pending == 0 then
  return false
end
