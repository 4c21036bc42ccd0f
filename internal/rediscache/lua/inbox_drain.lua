-- inbox_drain.lua: drains the pending lists of several inboxes of one
-- hash tag into their rings, what a fan-out does for the inboxes whose
-- list grew past drainAt (pending.go). A pending list whose ring is gone
-- is deleted: it would collect pushes for nothing.
--
-- KEYS ring, pending list, ring, pending list, … of one hash tag; ARGV[1]
-- InboxMax. Returns 1.
--
-- A script because a drain reads the list and the ring, then writes both:
-- a push in between would be lost. One call takes many inboxes, which
-- their shared hash tag allows.
--#include ring.lua
--#include ring_read.lua
--#include ring_write.lua
--#include ring_add.lua

local max = tonumber(ARGV[1])
for i = 1, #KEYS, 2 do
  load(KEYS[i])
  if version == FORMAT then
    local pending = redis.call('LRANGE', KEYS[i + 1], 0, -1)
    if #pending > 1 then
      drain(KEYS[i + 1], pending, max)
    end
  else
    redis.call('DEL', KEYS[i + 1])
  end
end
return 1
