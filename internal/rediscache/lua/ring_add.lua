-- ring_add.lua: the helpers of the scripts that add ids to a ring or drain
-- its pending list into it. It follows ring_write.lua.

-- addIDs adds packed ids (newest first, no duplicates) and trims to max.
-- Ids all newer than the newest — what a fan-out brings — go in as one
-- block before the head when they fit, or when the ring is full and the
-- oldest give way; a few others are inserted one by one; more are merged
-- with the whole ring, which is rewritten.
local function addIDs(add, max)
  local n = #add / SLOT
  if n == 0 then
    return
  end
  if (count == 0 or at(add, n - 1) > newest) and (count + n <= cap or cap >= max) then
    if n > cap then
      add, n, state = string.sub(add, 1, SLOT * cap), cap, INCOMPLETE
    end
    head = (head - n) % cap
    write(0, add)
    if count + n > cap then
      count, state = cap, INCOMPLETE -- the oldest gave way
    else
      count = count + n
    end
    if count > max then -- InboxMax was lowered since the fill
      count, state = max, INCOMPLETE
    end
    newest = at(add, 0)
    return
  end
  if n <= 16 then
    for j = 0, n - 1 do
      insert(at(add, j), string.sub(add, SLOT * j + 1, SLOT * j + SLOT), max)
    end
    return
  end
  local s = read(0, count)
  local parts, from, total = {}, 0, count
  for j = 0, n - 1 do
    local k, found = search(s, from, count, at(add, j))
    if not found then
      parts[#parts + 1] = string.sub(s, SLOT * from + 1, SLOT * k)
      parts[#parts + 1] = string.sub(add, SLOT * j + 1, SLOT * j + SLOT)
      from, total = k, total + 1
    end
  end
  parts[#parts + 1] = string.sub(s, SLOT * from + 1)
  local ids = table.concat(parts)
  if total > max then
    ids, state = string.sub(ids, 1, SLOT * max), INCOMPLETE
  end
  rewrite(ids, max)
end

-- drain moves the ids pushed onto pending list pk into the ring and saves
-- it. pending is the list: pushed ids in any order, repeats included, then
-- the sentinel, which stays.
local function drain(pk, pending, max)
  local ids = {}
  for i = 1, #pending - 1 do
    ids[i] = struct.unpack(ID, pending[i])
  end
  table.sort(ids, function(a, b) return a > b end)
  local parts, last = {}, nil -- nil: every id is a number, -1 and 0 too
  for _, id in ipairs(ids) do
    if id ~= last then
      parts[#parts + 1] = struct.pack(ID, id)
      last = id
    end
  end
  addIDs(table.concat(parts), max)
  save()
  redis.call('LTRIM', pk, -1, -1)
end
