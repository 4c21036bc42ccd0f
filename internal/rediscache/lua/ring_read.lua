-- ring_read.lua: the helpers that read a ring, for every inbox script that
-- does more than fill one. It follows ring.lua and a load: read, at,
-- search and locate work on key, cap, head and count.
--
-- Moving a Redis string into Lua costs about 1.3 µs a KB (Redis 7.0, on
-- the machine of LAYOUT.md's benchmarks), so nothing reads a whole ring
-- unless it rewrites it: a search probes single ids (a GETRANGE of one
-- slot) until 64 ids are left, then reads those.
--
-- Ids are compared as numbers, never as strings: Lua compares strings with
-- strcoll, which depends on the server's locale.

-- read returns the ids at positions from .. from+n-1 (0: the newest),
-- packed, newest first: one range, or two where the ring wraps.
local function read(from, n)
  if n <= 0 then
    return ''
  end
  local p = (head + from) % cap
  if p + n <= cap then
    return redis.call('GETRANGE', key, HEADER + SLOT * p, HEADER - 1 + SLOT * (p + n))
  end
  return redis.call('GETRANGE', key, HEADER + SLOT * p, HEADER - 1 + SLOT * cap) ..
    redis.call('GETRANGE', key, HEADER, HEADER - 1 + SLOT * (p + n - cap))
end

-- at returns the i-th id (from 0) of packed ids s.
local function at(s, i)
  return (struct.unpack(ID, s, SLOT * i + 1))
end

-- search looks for id among the ids lo .. hi-1 of s (newest first): it
-- returns id's index and true, or the index id would take and false.
local function search(s, lo, hi, id)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local e = at(s, mid)
    if e == id then
      return mid, true
    elseif e > id then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo, false
end

-- locate is search on the ring's positions lo .. hi-1: it probes single
-- ids until 64 are left, then reads those and the next extra (0 if nil),
-- which it returns too, with the position of their first.
local function locate(lo, hi, id, extra)
  while hi - lo > 64 do
    local mid = math.floor((lo + hi) / 2)
    local e = at(read(mid, 1), 0)
    if e > id then
      lo = mid + 1
    elseif e < id then
      hi = mid
    else
      lo, hi = mid, mid + 1 -- found: the read below returns it
    end
  end
  local s = read(lo, math.min(count, hi + (extra or 0)) - lo)
  local k, found = search(s, 0, hi - lo, id)
  return lo + k, found, s, lo
end
