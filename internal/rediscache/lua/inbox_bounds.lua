-- inbox_bounds.lua: InboxBounds. Drains the inbox's pending list, then
-- returns its newest and oldest id.
--
-- KEYS[1] ring, KEYS[2] pending list. ARGV[1] InboxMax. Returns nil if the
-- inbox is absent, an empty array if it is empty, else {newest, oldest}.
--
-- A script so that the drain before it loses no push, and so that the
-- oldest id is found from the header in the same round trip.
--#include ring.lua
--#include inbox_open.lua
--#include ring_read.lua

local max = tonumber(ARGV[1])
if #pending > 1 then
  -- Only a call that finds ids pending pays for the closures of the
  -- helpers that change a ring.
  --#include ring_write.lua
  --#include ring_add.lua
  drain(KEYS[2], pending, max)
end
if count == 0 then
  return {}
end
return {newest, at(read(count - 1, 1), 0)}
