-- inbox_fill.lua: FillInbox. Creates or replaces an inbox: its ring holds
-- the given ids, in the slots ringCap gives them, and its pending list
-- only the sentinel; both keys get the ttl.
--
-- KEYS[1] ring, KEYS[2] pending list. ARGV[1] the ids, 7 bytes each
-- (ring.lua's ID), newest first, no duplicates, at most InboxMax;
-- ARGV[2] '1' if the inbox is complete, '0' if not; ARGV[3] InboxMax;
-- ARGV[4] the ttl in ms, 0 for none. Returns 1.
--
-- A script, not a MULTI of plain commands, so that the ring is laid out
-- by ring.lua, as every other script lays it out, and nowhere else.
--#include ring.lua

key = KEYS[1]
local s = ARGV[1]
local n = #s / SLOT
state = INCOMPLETE
if ARGV[2] == '1' then
  state = COMPLETE
end
cap, head, count, newest = ringCap(n, tonumber(ARGV[3])), 0, n, 0
if n > 0 then
  newest = struct.unpack(ID, s)
end
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('SET', KEYS[1], encode(s), 'PX', ttl)
else
  redis.call('SET', KEYS[1], encode(s))
end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[2], SENTINEL)
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
