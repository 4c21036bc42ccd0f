-- inbox_add.lua: AddToInbox. Drains the inbox's pending list, adds ids to
-- its ring (addIDs), trims it to InboxMax and marks it incomplete if it
-- trimmed or if asked to.
--
-- KEYS[1] ring, KEYS[2] pending list. ARGV[1] the ids, 7 bytes each
-- (ring.lua's ID), newest first, no duplicates; ARGV[2] InboxMax;
-- ARGV[3] '1' to mark the inbox incomplete. Returns nil if the inbox is
-- absent, else 1.
--
-- A script because an insert reads the ring to find its place, then
-- writes: nothing may change the ring in between.
--#include ring.lua
--#include inbox_open.lua
--#include ring_read.lua
--#include ring_write.lua
--#include ring_add.lua

local max = tonumber(ARGV[2])
if #pending > 1 then
  drain(KEYS[2], pending, max)
end
if ARGV[3] == '1' then
  state = INCOMPLETE
end
addIDs(ARGV[1], max)
save()
return 1
