-- inbox_remove.lua: RemoveFromInbox. Drains the inbox's pending list, then
-- removes ids from its ring: a few (a read's lazy delete of deleted posts)
-- one by one, more (an unfollow's) by rewriting the ring without them.
--
-- KEYS[1] ring, KEYS[2] pending list. ARGV[1] the ids, 7 bytes each
-- (ring.lua's ID), newest first, no duplicates; ARGV[2] InboxMax. Returns
-- nil if the inbox is absent, else 1.
--
-- A script because a removal finds the id, then moves the ids on one side
-- of it: nothing may change the ring in between.
--#include ring.lua
--#include inbox_open.lua
--#include ring_read.lua
--#include ring_write.lua
--#include ring_add.lua

if #pending > 1 then
  drain(KEYS[2], pending, tonumber(ARGV[2]))
end
local rm = ARGV[1]
local changed = false
if #rm <= SLOT * 16 then
  for j = 0, #rm / SLOT - 1 do
    changed = remove(at(rm, j)) or changed
  end
else
  local s = read(0, count)
  local parts, from = {}, 0
  for j = 0, #rm / SLOT - 1 do
    local k, found = search(s, from, count, at(rm, j))
    if found then
      parts[#parts + 1] = string.sub(s, SLOT * from + 1, SLOT * k)
      from = k + 1
    end
  end
  if #parts > 0 then
    parts[#parts + 1] = string.sub(s, SLOT * from + 1)
    rewrite(table.concat(parts), cap)
    changed = true
  end
end
if changed then
  save()
end
return 1
