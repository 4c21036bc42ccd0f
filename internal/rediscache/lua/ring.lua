-- ring.lua: the layout of an inbox, defined once. Every inbox script
-- starts with this file (FillInbox's too), so no other file, Lua or Go,
-- knows an offset or a header field. It defines no script of its own:
-- the constants of the layout, the header fields of the inbox a script is
-- working on, load(k), which reads them, header(), which encodes them,
-- ringCap and encode, which lay out a whole ring.
--
-- An inbox is two keys of one hash tag (keys.go names them).
--
-- Its ring is one Redis string: a header, then cap fixed-width slots,
-- each a post id as SLOT (7) big-endian bytes of two's complement: |id| <
-- 2^53, negative for a post from before 2025. struct's 'i7' extends the
-- sign, so every id is an exact Lua number and ids compare as numbers.
--
--   offset  size    field
--   0       1       format: FORMAT; any other value reads as absent.
--                   Format 1 read slots unsigned; its rings live under
--                   other keys (keys.go), which this version never reads
--   1       1       state: COMPLETE or INCOMPLETE
--   2       4       cap: slots in the ring (big-endian, as every field)
--   6       4       head: the slot of the newest id
--   10      4       count: ids held; the i-th newest is in slot
--                   (head+i) mod cap
--   14      7       the newest id (0 when count is 0, which no id is),
--                   so that a push reads one range, not two
--   21      7*cap   the slots
--
-- Slots run newest first from head, so a page is one range (two where it
-- wraps) already in reading order, and adding a new newest id writes slot
-- head-1: when the ring is full that slot is the oldest id's, and trimming
-- costs nothing.
--
-- Its pending list is a Redis list: the ids pushed since the ring was last
-- drained, 7 bytes each as in a slot, in arrival order (newest pushed
-- first), repeats included, then SENTINEL, so that the list exists while
-- nothing is pending and LPUSHX pushes onto it. PushToInboxes (pending.go)
-- pushes ids onto it from Go with appendID (ids.go), the one other place
-- that encodes an id.

local FORMAT = 2
local COMPLETE, INCOMPLETE = 0, 1
local HEADER = 21 -- bytes before slot 0
local SLOT = 7 -- bytes a slot
local FIELDS = '>BBI4I4I4i7' -- the header: format, state, cap, head, count, newest
local ID = '>i7' -- a slot, or an element of the pending list
local SENTINEL = 's' -- the last element of every pending list

-- The header of the inbox a script is working on, and its ring's key. A
-- missing key, or one too short, reads as version 0, which each script
-- treats as absent.
local key
local version, state, cap, head, count, newest = 0, 0, 0, 0, 0, 0

-- load reads the header of ring k.
local function load(k)
  key = k
  version, state, cap, head, count, newest = 0, 0, 0, 0, 0, 0
  local hdr = redis.call('GETRANGE', k, 0, HEADER - 1)
  if #hdr == HEADER then
    version, state, cap, head, count, newest = struct.unpack(FIELDS, hdr)
  end
end

-- header returns the header of the fields above.
local function header()
  return struct.pack(FIELDS, FORMAT, state, cap, head, count, newest)
end

-- ringCap returns the slots a ring gets for n ids when it is filled or
-- must grow: half as many again plus 16, so that an inbox growing one push
-- at a time is rewritten O(log n) times, but never more than max
-- (InboxMax), so that a full inbox has no slack at all.
local function ringCap(n, max)
  return math.max(n, math.min(max, n + math.floor(n / 2) + 16))
end

-- encode returns the whole ring of the fields above, with head 0: the
-- header, packed ids s in slots 0 onwards, zeros in the free slots.
local function encode(s)
  local free = SLOT * cap - #s
  local pad = '\0\0\0\0\0\0\0\0' -- zeros by doubling: string.rep goes a byte at a time
  while #pad < free do
    pad = pad .. pad
  end
  return header() .. s .. string.sub(pad, 1, free)
end
