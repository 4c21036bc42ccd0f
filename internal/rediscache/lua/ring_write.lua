-- ring_write.lua: the helpers of the scripts that change a ring. It
-- follows ring_read.lua; the helpers update key, state, cap, head, count
-- and newest of ring.lua, and a script that changed them ends with
-- save().
--
-- An insert or a removal moves the ids on the shorter side of it by one
-- slot, so a late id (fan-outs finishing out of order) costs a few
-- GETRANGEs and SETRANGEs of a few bytes, and the ring always holds
-- exactly what a sorted set would.

-- write stores packed ids at positions from, from+1, ...
local function write(from, ids)
  if #ids == 0 then
    return
  end
  local p = (head + from) % cap
  local m = SLOT * (cap - p)
  redis.call('SETRANGE', key, HEADER + SLOT * p, string.sub(ids, 1, m))
  if #ids > m then
    redis.call('SETRANGE', key, HEADER, string.sub(ids, m + 1))
  end
end

-- save writes the header.
local function save()
  redis.call('SETRANGE', key, 0, header())
end

-- rewrite replaces the ids with packed ids s, newest first from slot 0,
-- growing the ring if they do not fit. Growing is one SET of the new
-- value, which allocates exactly, where a SETRANGE past the end would
-- double the allocation; KEEPTTL keeps the inbox's ttl.
local function rewrite(s, max)
  local n = #s / SLOT
  head, count, newest = 0, n, 0
  if n > 0 then
    newest = at(s, 0)
  end
  if n <= cap then
    write(0, s)
    return
  end
  cap = ringCap(n, max)
  redis.call('SET', key, encode(s), 'KEEPTTL')
end

-- insert adds id (bin: its slot) and trims to max; it reports whether the
-- inbox changed. Late ids are usually a few places below the newest, so
-- the first 16 positions are searched first.
local function insert(id, bin, max)
  local m = math.min(count, 16)
  local k, found = locate(0, m, id)
  if not found and k == m and m < count then
    k, found = locate(m, count, id)
  end
  if found then
    return false
  end
  if k >= max then -- older than a full inbox: dropped at once, but missing
    state = INCOMPLETE
    return true
  end
  if count == cap and cap < max then
    local s = read(0, count)
    rewrite(string.sub(s, 1, SLOT * k) .. bin .. string.sub(s, SLOT * k + 1), max)
    return true
  end
  -- A full ring (count = cap) drops its oldest id to make room.
  local full = count == cap
  if k <= count / 2 then
    -- The k newer ids move one slot towards the head.
    local newer = read(0, k)
    head = (head - 1) % cap
    write(0, newer .. bin)
  else
    -- The older ids move one slot towards the tail.
    local last = count
    if full then
      last = count - 1
    end
    write(k, bin .. read(k, last - k))
  end
  if k == 0 then
    newest = id
  end
  if full then
    state = INCOMPLETE
  else
    count = count + 1
  end
  if count > max then -- InboxMax was lowered since the fill
    count, state = max, INCOMPLETE
  end
  return true
end

-- remove removes id; it reports whether the inbox held it.
local function remove(id)
  if count == 0 or id > newest then
    return false
  end
  local k, found = locate(0, count, id)
  if not found then
    return false
  end
  if k < count / 2 then
    -- The k newer ids move one slot towards the tail.
    local newer = read(0, k)
    head = (head + 1) % cap
    write(0, newer)
  else
    write(k, read(k + 1, count - k - 1))
  end
  count = count - 1
  if count == 0 then
    newest = 0
  elseif k == 0 then
    newest = at(read(0, 1), 0)
  end
  return true
end
