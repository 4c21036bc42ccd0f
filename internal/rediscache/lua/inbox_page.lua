-- inbox_page.lua: InboxPage. Drains the inbox's pending list, then reads
-- up to n ids strictly below before. A first page is one range after the
-- header. A later one must find before first; its cursor is most often a
-- few pages down (infinite scroll), so one read takes the newest 64 ids
-- and the n after them, and only a cursor below those is located, whose
-- last read takes the page along.
--
-- KEYS[1] ring, KEYS[2] pending list. ARGV[1] before (0: from the
-- newest; ids are never 0, and negative below 2025); ARGV[2] n; ARGV[3]
-- InboxMax; ARGV[4] the ttl a read renews, in ms (0: none). Returns nil if
-- the inbox is absent, else 'c' (complete) or 'i' (incomplete), then the
-- ids, 7 bytes each (ring.lua's ID), newest first.
--
-- A read of an inbox that holds ids gives both keys the ttl again once a
-- 32nd of it has passed (a write at most that often), so that only an
-- inbox nobody reads expires. An inbox read while it holds nothing keeps
-- its ttl, the short one of an empty feed; once pushes have filled it, the
-- next read renews it.
--
-- A script so that a page is one round trip that finds its cursor in the
-- ring without moving the ring out of Redis, and so that the drain before
-- it loses no push.
--#include ring.lua
--#include inbox_open.lua
--#include ring_read.lua

local max = tonumber(ARGV[3])
if #pending > 1 then
  -- Only a read that finds ids pending pays for the closures of the
  -- helpers that change a ring: most find the list empty.
  --#include ring_write.lua
  --#include ring_add.lua
  drain(KEYS[2], pending, max)
end
local ttl = tonumber(ARGV[4])
if ttl > 0 and count > 0 then
  local left = redis.call('PTTL', KEYS[1])
  if left >= 0 and left < ttl - math.floor(ttl / 32) then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
end
local mark = 'i'
if state == COMPLETE then
  mark = 'c'
end
local before, n = tonumber(ARGV[1]), tonumber(ARGV[2])
if before == 0 or count == 0 or before > newest then
  return mark .. read(0, math.min(count, n))
end
local m = math.min(count, 64)
local s = read(0, math.min(count, m + n))
local k, found
if at(s, m - 1) <= before then
  k, found = search(s, 0, m, before)
  if found then
    k = k + 1
  end
  return mark .. string.sub(s, SLOT * k + 1, SLOT * math.min(count, k + n))
end
local base
k, found, s, base = locate(m, count, before, n)
if found then
  k = k + 1
end
return mark .. string.sub(s, SLOT * (k - base) + 1, SLOT * (math.min(count, k + n) - base))
