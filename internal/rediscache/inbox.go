package rediscache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// An inbox is one Redis string: a header, then a ring of fixed-width
// slots, each a post id as 7 big-endian bytes (ids are below 2^53). The
// package comment says why.
//
//	offset  size  field
//	0       1     format, ringFormat; any other value reads as absent
//	1       1     state: stateComplete or stateIncomplete
//	2       4     cap: slots in the ring (big-endian, as every field)
//	6       4     head: the slot of the newest id
//	10      4     count: ids held; the i-th newest is in slot (head+i) mod cap
//	14      7     the newest id (0 when count is 0), so that a push reads
//	              one range, not two
//	21      7*cap the slots
//
// Slots run newest first from head, so a page is one range (two where it
// wraps) already in reading order, and a push of a new newest id writes
// slot head-1: when the ring is full that slot is the oldest id's, and
// trimming costs nothing. The scripts spell the offsets out (21, 7).
const (
	ringFormat      = 1
	stateComplete   = 0
	stateIncomplete = 1
	headerLen       = 21
	slotLen         = 7
)

// ringCap returns the slots a ring gets for n ids when it is filled or
// must grow: half as many again plus 16, so that an inbox growing one
// push at a time is rewritten O(log n) times, but never more than
// inboxMax, so that a full inbox has no slack at all. ringWriteLua's
// rewrite applies the same rule.
func ringCap(n, inboxMax int) int {
	return max(n, min(inboxMax, n+n/2+16))
}

// inboxLoadLua starts every inbox script: it declares the header fields
// of the inbox a script is working on and load(k), which reads them from
// inbox k. A missing key reads as version 0, which each script treats as
// absent. The push script loads one inbox after another; the others work
// on KEYS[1] (inboxHeaderLua).
const inboxLoadLua = `
local key
local version, state, cap, head, count, newest = 0, 0, 0, 0, 0, 0
local function load(k)
  key = k
  version, state, cap, head, count, newest = 0, 0, 0, 0, 0, 0
  local hdr = redis.call('GETRANGE', k, 0, 20)
  if #hdr == 21 then
    version, state, cap, head, count, newest = struct.unpack('>BBI4I4I4I7', hdr)
  end
end
`

// inboxHeaderLua starts the single-inbox scripts: KEYS[1], loaded.
const inboxHeaderLua = inboxLoadLua + `
load(KEYS[1])
`

// ringLua holds the helpers of the scripts that do more than the push's
// fast path, and ringWriteLua those of the scripts that change a ring.
// They read and update key, state, cap, head, count and newest of
// inboxHeaderLua; a script that changed them ends with save().
//
// Moving a Redis string into Lua costs about 1.3 µs a KB on this
// package's benchmark machine (Redis 7.0), so nothing reads a whole ring
// unless it rewrites it: a search probes single ids (GETRANGE of 7
// bytes) until 64 ids are left, then reads those; an insert or removal
// moves the ids on the shorter side of it by one slot.
//
// Ids are compared as numbers, never as strings: Lua compares strings with
// strcoll, which depends on the server's locale.
const ringLua = `
-- read returns the ids at positions from .. from+n-1 (0: the newest),
-- packed, newest first: one range, or two where the ring wraps.
local function read(from, n)
  if n <= 0 then
    return ''
  end
  local p = (head + from) % cap
  if p + n <= cap then
    return redis.call('GETRANGE', key, 21 + 7 * p, 20 + 7 * (p + n))
  end
  return redis.call('GETRANGE', key, 21 + 7 * p, 20 + 7 * cap) ..
    redis.call('GETRANGE', key, 21, 20 + 7 * (p + n - cap))
end

-- at returns the i-th id (from 0) of packed ids s.
local function at(s, i)
  return (struct.unpack('>I7', s, 7 * i + 1))
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

`

// ringWriteLua holds the helpers of the scripts that change a ring; it
// follows ringLua.
const ringWriteLua = `
-- write stores packed ids at positions from, from+1, ...
local function write(from, ids)
  if #ids == 0 then
    return
  end
  local p = (head + from) % cap
  local m = 7 * (cap - p)
  redis.call('SETRANGE', key, 21 + 7 * p, string.sub(ids, 1, m))
  if #ids > m then
    redis.call('SETRANGE', key, 21, string.sub(ids, m + 1))
  end
end

local function save()
  redis.call('SETRANGE', key, 1, struct.pack('>BI4I4I4I7', state, cap, head, count, newest))
end

-- rewrite replaces the ids with packed ids s, newest first from slot 0,
-- growing the ring if they do not fit. Growing is one SET of the new
-- value, which allocates exactly, where a SETRANGE past the end would
-- double the allocation; KEEPTTL keeps the inbox's ttl.
local function rewrite(s, max)
  local n = #s / 7
  head, count, newest = 0, n, 0
  if n > 0 then
    newest = at(s, 0)
  end
  if n <= cap then
    write(0, s)
    return
  end
  cap = math.max(n, math.min(max, n + math.floor(n / 2) + 16))
  local pad = '\0\0\0\0\0\0\0\0' -- zeros by doubling: string.rep goes a byte at a time
  while #pad < 7 * (cap - n) do
    pad = pad .. pad
  end
  redis.call('SET', key, struct.pack('>BBI4I4I4I7', 1, state, cap, head, count, newest) .. s ..
    string.sub(pad, 1, 7 * (cap - n)), 'KEEPTTL')
end

-- insert adds id (bin: its 7 bytes) and trims to max; it reports whether
-- the inbox changed. Late ids are usually a few places below the newest,
-- so the first 16 positions are searched first.
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
    state = 1
    return true
  end
  if count == cap and cap < max then
    local s = read(0, count)
    rewrite(string.sub(s, 1, 7 * k) .. bin .. string.sub(s, 7 * k + 1), max)
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
    state = 1
  else
    count = count + 1
  end
  if count > max then -- InboxMax was lowered since the fill
    count, state = max, 1
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
`

// ringAddLua holds the helpers of the scripts that add ids to a ring or
// drain its pending list; it follows ringWriteLua.
const ringAddLua = `
-- addIDs adds packed ids (newest first, no duplicates) and trims to max.
-- Ids all newer than the newest — what a fan-out brings — go in as one
-- block before the head when they fit, or when the ring is full and the
-- oldest give way; a few others are inserted one by one; more are merged
-- with the whole ring, which is rewritten.
local function addIDs(add, max)
  local n = #add / 7
  if n == 0 then
    return
  end
  if at(add, n - 1) > newest and (count + n <= cap or cap >= max) then
    if n > cap then
      add, n, state = string.sub(add, 1, 7 * cap), cap, 1
    end
    head = (head - n) % cap
    write(0, add)
    if count + n > cap then
      count, state = cap, 1 -- the oldest gave way
    else
      count = count + n
    end
    if count > max then -- InboxMax was lowered since the fill
      count, state = max, 1
    end
    newest = at(add, 0)
    return
  end
  if n <= 16 then
    for j = 0, n - 1 do
      insert(at(add, j), string.sub(add, 7 * j + 1, 7 * j + 7), max)
    end
    return
  end
  local s = read(0, count)
  local parts, from, total = {}, 0, count
  for j = 0, n - 1 do
    local k, found = search(s, from, count, at(add, j))
    if not found then
      parts[#parts + 1] = string.sub(s, 7 * from + 1, 7 * k)
      parts[#parts + 1] = string.sub(add, 7 * j + 1, 7 * j + 7)
      from, total = k, total + 1
    end
  end
  parts[#parts + 1] = string.sub(s, 7 * from + 1)
  local ids = table.concat(parts)
  if total > max then
    ids, state = string.sub(ids, 1, 7 * max), 1
  end
  rewrite(ids, max)
end

-- drain moves the ids pushed onto pending list pk into the ring and saves
-- it. pending is the list: pushed ids in any order, repeats included,
-- then its sentinel.
local function drain(pk, pending, max)
  local ids = {}
  for i = 1, #pending - 1 do
    ids[i] = struct.unpack('>I7', pending[i])
  end
  table.sort(ids, function(a, b) return a > b end)
  local parts, last = {}, -1
  for _, id in ipairs(ids) do
    if id ~= last then
      parts[#parts + 1] = struct.pack('>I7', id)
      last = id
    end
  end
  addIDs(table.concat(parts), max)
  save()
  redis.call('LTRIM', pk, -1, -1)
end
`

// pendingLua follows inboxHeaderLua in the scripts on one inbox (KEYS[1]
// its ring, KEYS[2] its pending list): it reads the pending list into
// pending and returns nil (absent) when the ring or the list is missing.
// A ring without its list (evicted, or left by an older version) has
// missed pushes, so it is not to be trusted.
const pendingLua = `
if version ~= 1 then
  return false
end
local pending = redis.call('LRANGE', KEYS[2], 0, -1)
if #pending == 0 then
  return false
end
`

// drainLua drains the pending list of KEYS[2], with InboxMax max, if it
// holds any id. Only then are the helpers that change a ring defined: most
// reads find the list empty and pay for no closures. It follows ringLua.
const drainLua = `
if #pending > 1 then
` + ringWriteLua + ringAddLua + `
  drain(KEYS[2], pending, max)
end
`

// drainScript drains the pending lists of several inboxes of one slot:
// what a fan-out does for the inboxes whose list grew past drainAt. A
// pending list whose ring is gone is deleted: it would collect pushes for
// nothing.
//
// KEYS ring, pending list, ring, pending list, …; ARGV[1] InboxMax.
const drainScript = inboxLoadLua + ringLua + ringWriteLua + ringAddLua + `
local max = tonumber(ARGV[1])
for i = 1, #KEYS, 2 do
  load(KEYS[i])
  if version == 1 then
    local pending = redis.call('LRANGE', KEYS[i + 1], 0, -1)
    if #pending > 1 then
      drain(KEYS[i + 1], pending, max)
    end
  else
    redis.call('DEL', KEYS[i + 1])
  end
end
return 1
`

// addScript adds ids to one inbox if it exists, trims it to InboxMax and
// marks it incomplete if it trimmed or if asked to: addIDs. It returns
// nil if the inbox is absent.
//
// KEYS[1] ring, KEYS[2] pending list; ARGV[1] the ids, 7 bytes each,
// newest first, no duplicates; ARGV[2] InboxMax; ARGV[3] "1" to mark
// incomplete.
const addScript = inboxHeaderLua + pendingLua + ringLua + ringWriteLua + ringAddLua + `
local max = tonumber(ARGV[2])
if #pending > 1 then
  drain(KEYS[2], pending, max)
end
if ARGV[3] == '1' then
  state = 1
end
addIDs(ARGV[1], max)
save()
return 1
`

// removeScript removes ids from one inbox: a few (a read's lazy delete)
// one by one, more (an unfollow's) by rewriting the ring without them. It
// returns nil if the inbox is absent.
//
// KEYS[1] ring, KEYS[2] pending list; ARGV[1] the ids, 7 bytes each,
// newest first, no duplicates; ARGV[2] InboxMax.
const removeScript = inboxHeaderLua + pendingLua + ringLua + ringWriteLua + ringAddLua + `
if #pending > 1 then
  drain(KEYS[2], pending, tonumber(ARGV[2]))
end
local rm = ARGV[1]
local changed = false
if #rm <= 7 * 16 then
  for j = 0, #rm / 7 - 1 do
    changed = remove(at(rm, j)) or changed
  end
else
  local s = read(0, count)
  local parts, from = {}, 0
  for j = 0, #rm / 7 - 1 do
    local k, found = search(s, from, count, at(rm, j))
    if found then
      parts[#parts + 1] = string.sub(s, 7 * from + 1, 7 * k)
      from = k + 1
    end
  end
  if #parts > 0 then
    parts[#parts + 1] = string.sub(s, 7 * from + 1)
    rewrite(table.concat(parts), cap)
    changed = true
  end
end
if changed then
  save()
end
return 1
`

// pageScript reads a page of one inbox, draining its pending list first.
// A first page is one range after the header. A later one must find
// before first; its cursor is most often a few pages down (infinite
// scroll), so one read takes the newest 64 ids and the n after them, and
// only a cursor below those is located, whose last read takes the page
// along.
//
// KEYS[1] ring, KEYS[2] pending list; ARGV[1] before (0: from the newest);
// ARGV[2] n; ARGV[3] InboxMax. Returns nil if the inbox is absent, else
// the state byte and the ids, 7 bytes each, newest first.
const pageScript = inboxHeaderLua + pendingLua + ringLua + `
local max = tonumber(ARGV[3])
` + drainLua + `
local before, n = tonumber(ARGV[1]), tonumber(ARGV[2])
if before <= 0 or before > newest then
  return string.char(state) .. read(0, math.min(count, n))
end
local m = math.min(count, 64)
local s = read(0, math.min(count, m + n))
local k, found
if at(s, m - 1) <= before then
  k, found = search(s, 0, m, before)
  if found then
    k = k + 1
  end
  return string.char(state) .. string.sub(s, 7 * k + 1, 7 * math.min(count, k + n))
end
local base
k, found, s, base = locate(m, count, before, n)
if found then
  k = k + 1
end
return string.char(state) .. string.sub(s, 7 * (k - base) + 1, 7 * (math.min(count, k + n) - base))
`

// boundsScript returns nil if the inbox is absent, an empty array if it is
// empty, else its newest and oldest id, after draining its pending list.
//
// KEYS[1] ring, KEYS[2] pending list; ARGV[1] InboxMax.
const boundsScript = inboxHeaderLua + pendingLua + ringLua + `
local max = tonumber(ARGV[1])
` + drainLua + `
if count == 0 then
  return {}
end
return {newest, at(read(count - 1, 1), 0)}
`

// An inbox is two keys of one hash tag: its ring,
// inbox:{g<group>}:<reader>, and its pending list, the ring's key and
// ":p". The tag is the reader's group, not the reader, so that the
// fan-out's occasional drains can take many inboxes of a group in one
// script call on one slot (drainInboxes).
func (c *Cache) inboxKey(reader int64) string {
	return string(c.appendInboxKey(make([]byte, 0, len(c.inboxPrefix)+32), reader))
}

func (c *Cache) pendingKey(reader int64) string {
	return string(append(c.appendInboxKey(make([]byte, 0, len(c.inboxPrefix)+34), reader), pendingSuffix...))
}

const pendingSuffix = ":p"

// pendingSentinel is the last element of every pending list: the list
// exists, so LPUSHX pushes onto it, even when no id is pending.
const pendingSentinel = "s"

// InboxKeys returns the keys of reader's inbox, its ring and its pending
// list, for tools and tests outside the package that must find an
// inbox's node or measure it.
func (c *Cache) InboxKeys(reader int64) (ring, pending string) {
	return c.inboxKey(reader), c.pendingKey(reader)
}

func (c *Cache) appendInboxKey(b []byte, reader int64) []byte {
	b = append(b, c.inboxPrefix...)
	b = append(b, '{', 'g')
	b = strconv.AppendInt(b, int64(c.inboxGroup(reader)), 10)
	b = append(b, '}', ':')
	return strconv.AppendInt(b, reader, 10)
}

// inboxGroup returns reader's group, 0 to inboxGroups-1. Reader ids are
// mixed first (the splitmix64 finalizer): time-ordered ids share low and
// high bits, and a plain modulo would crowd a few groups.
func (c *Cache) inboxGroup(reader int64) int {
	x := uint64(reader)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(c.inboxGroups))
}

// pendingKeys returns the pending lists of readers' inboxes, all cut from
// one string so that a batch of a thousand keys costs a handful of
// allocations.
func (c *Cache) pendingKeys(readers []int64) []string {
	var all strings.Builder
	all.Grow(len(readers) * (len(c.inboxPrefix) + 26))
	ends := make([]int, len(readers))
	var scratch [64]byte
	for i, r := range readers {
		all.Write(append(c.appendInboxKey(scratch[:0], r), pendingSuffix...))
		ends[i] = all.Len()
	}
	s := all.String()
	keys := make([]string, len(readers))
	start := 0
	for i, end := range ends {
		keys[i] = s[start:end]
		start = end
	}
	return keys
}

// maxDrainInboxes bounds the inboxes of one drain script call, so that a
// call holds Redis for well under a millisecond.
const maxDrainInboxes = 32

// drainCalls cuts readers' inboxes into the key lists of drain script
// calls: each list is ring, pending list, ring, … of one group (one
// slot), at most maxDrainInboxes inboxes; lists come in group order.
func (c *Cache) drainCalls(readers []int64) [][]string {
	byGroup := map[int][]int64{}
	for _, r := range readers {
		g := c.inboxGroup(r)
		byGroup[g] = append(byGroup[g], r)
	}
	var calls [][]string
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		rs := byGroup[g]
		for len(rs) > 0 {
			n := min(len(rs), maxDrainInboxes)
			keys := make([]string, 0, 2*n)
			for _, r := range rs[:n] {
				keys = append(keys, c.inboxKey(r), c.pendingKey(r))
			}
			calls = append(calls, keys)
			rs = rs[n:]
		}
	}
	return calls
}

// appendID appends id as a slot: 7 bytes, big-endian.
func appendID(b []byte, id int64) []byte {
	return append(b, byte(id>>48), byte(id>>40), byte(id>>32), byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// packIDs returns ids as slots, newest first, without duplicates.
func packIDs(ids []int64) []byte {
	asc := slices.Compact(slices.Sorted(slices.Values(ids)))
	b := make([]byte, 0, len(asc)*slotLen)
	for _, id := range slices.Backward(asc) {
		b = appendID(b, id)
	}
	return b
}

// parseIDs decodes slots.
func parseIDs(b string) ([]int64, error) {
	if len(b)%slotLen != 0 {
		return nil, fmt.Errorf("inbox reply of %d bytes is not a whole number of ids", len(b))
	}
	ids := make([]int64, len(b)/slotLen)
	for i := range ids {
		s := b[i*slotLen : (i+1)*slotLen]
		ids[i] = int64(s[0])<<48 | int64(s[1])<<40 | int64(s[2])<<32 | int64(s[3])<<24 |
			int64(s[4])<<16 | int64(s[5])<<8 | int64(s[6])
	}
	return ids, nil
}

// InboxPage returns up to n ids of reader's inbox strictly below before (0:
// from the newest), newest first, in one round trip.
func (c *Cache) InboxPage(ctx context.Context, reader, before int64, n int) (feed.InboxPage, error) {
	reply, err := c.page.Run(ctx, c.client, c.keys(reader), max(before, 0), max(n, 0), c.maxArg).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return feed.InboxPage{}, nil
	case err != nil:
		return feed.InboxPage{}, fmt.Errorf("rediscache: page inbox %d: %w", reader, err)
	case len(reply) == 0:
		return feed.InboxPage{}, fmt.Errorf("rediscache: page inbox %d: empty reply", reader)
	}
	page := feed.InboxPage{Exists: true, Complete: reply[0] == stateComplete}
	if len(reply) > 1 {
		if page.IDs, err = parseIDs(reply[1:]); err != nil {
			return feed.InboxPage{}, fmt.Errorf("rediscache: page inbox %d: %w", reader, err)
		}
	}
	return page, nil
}

// FillInbox creates or replaces reader's inbox with the newest InboxMax of
// ids, and empties its pending list, in one transaction; it is complete
// only if complete is set and nothing was trimmed.
func (c *Cache) FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error {
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: fill inbox %d: %w", reader, err)
	}
	slots := packIDs(ids)
	if len(slots) > c.inboxMax*slotLen {
		slots = slots[:c.inboxMax*slotLen]
		complete = false
	}
	n := len(slots) / slotLen
	slotCount := ringCap(n, c.inboxMax)
	size := headerLen + slotCount*slotLen
	v := make([]byte, 0, size)
	v = append(v, ringFormat, stateComplete)
	if !complete {
		v[1] = stateIncomplete
	}
	v = appendUint32(v, uint32(slotCount))
	v = appendUint32(v, 0) // head
	v = appendUint32(v, uint32(n))
	v = append(v, slots[:min(len(slots), slotLen)]...)
	if n == 0 {
		v = appendID(v, 0)
	}
	v = append(v, slots...)
	v = v[:size] // the free slots: zeros, from make
	ttl = max(ttl, 0)
	pending := c.pendingKey(reader)
	_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.inboxKey(reader), v, ttl)
		p.Del(ctx, pending)
		p.RPush(ctx, pending, pendingSentinel)
		if ttl > 0 {
			p.PExpire(ctx, pending, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rediscache: fill inbox %d with %d ids: %w", reader, n, err)
	}
	return nil
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// AddToInbox adds ids to reader's inbox if it exists, trims it, and marks
// it incomplete if markIncomplete is set.
func (c *Cache) AddToInbox(ctx context.Context, reader int64, ids []int64, markIncomplete bool) error {
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: add to inbox %d: %w", reader, err)
	}
	if len(ids) == 0 && !markIncomplete {
		return nil
	}
	mark := "0"
	if markIncomplete {
		mark = "1"
	}
	err := c.add.Run(ctx, c.client, c.keys(reader), packIDs(ids), c.maxArg, mark).Err()
	if err != nil && !errors.Is(err, redis.Nil) { // nil: no inbox to add to
		return fmt.Errorf("rediscache: add %d ids to inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// drainAt is how many pending ids make a push drain an inbox's pending
// list, at most. Reads drain the lists of active readers; this bounds the
// lists of the others.
const drainAt = 64

// PushToInboxes adds id to the inbox of each reader whose inbox exists:
// one pipelined round trip of LPUSHX onto the pending lists, a plain
// command, where a script costs Redis several times as much. The few
// lists that grew to drainAt are drained into their rings in a second
// round trip.
func (c *Cache) PushToInboxes(ctx context.Context, readers []int64, id int64) error {
	if err := feed.CheckInboxIDs(id); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	if len(readers) == 0 {
		return nil
	}
	var bin any = string(appendID(nil, id)) // boxed once for every command
	keys := c.pendingKeys(readers)
	cmds := make([]*redis.IntCmd, len(keys))
	p := c.client.Pipeline()
	for i, k := range keys {
		cmds[i] = p.LPushX(ctx, k, bin)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	var full []int64
	for i, cmd := range cmds {
		// The list holds the pending ids and the sentinel.
		if cmd.Val()-1 >= int64(min(drainAt, c.inboxMax)) {
			full = append(full, readers[i])
		}
	}
	if len(full) == 0 {
		return nil
	}
	if err := c.drainInboxes(ctx, full); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	return nil
}

// drainInboxes drains readers' pending lists, one EVALSHA per group of
// inboxes, in one pipeline.
func (c *Cache) drainInboxes(ctx context.Context, readers []int64) error {
	calls := c.drainCalls(readers)
	args := []any{c.maxArg}
	cmds, err := c.evalAll(ctx, calls, args, c.drain.EvalSha)
	if err == nil {
		return nil
	}
	// A node that lost its scripts (restart, SCRIPT FLUSH, failover)
	// answers NOSCRIPT; any other error fails the batch, which is safe to
	// redo because a drain is idempotent.
	var missing [][]string
	for i, cmd := range cmds {
		switch err := cmd.Err(); {
		case err == nil:
		case isNoScript(err):
			missing = append(missing, calls[i])
		default:
			return fmt.Errorf("drain %d inboxes: %w", len(readers), err)
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("drain %d inboxes: %w", len(readers), err)
	}
	// Load the script everywhere so that the next batches find it, then
	// redo the missed calls with EVAL, which needs no cache: even if the
	// load failed on some node, this batch completes.
	loadErr := c.loadScript(ctx, c.drain)
	if _, err := c.evalAll(ctx, missing, args, c.drain.Eval); err != nil {
		return fmt.Errorf("drain %d inboxes (%d calls without the script): %w",
			len(readers), len(missing), errors.Join(err, loadErr))
	}
	return nil
}

// evalAll runs a script once per key list in one pipeline, with EVALSHA
// or EVAL, and returns the commands in the order of calls.
func (c *Cache) evalAll(ctx context.Context, calls [][]string, args []any,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	p := c.client.Pipeline()
	for i, keys := range calls {
		cmds[i] = eval(ctx, p, keys, args...)
	}
	_, err := p.Exec(ctx)
	return cmds, err
}

// loadScript loads script on every node that may run it. A
// ClusterClient's SCRIPT LOAD already goes to every node, replicas
// included, so that a promoted replica has it too; a Ring's goes to one
// shard, so each is asked.
func (c *Cache) loadScript(ctx context.Context, script *redis.Script) error {
	if ring, ok := c.client.(*redis.Ring); ok {
		return ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			return script.Load(ctx, shard).Err()
		})
	}
	return script.Load(ctx, c.client).Err()
}

// keys returns the keys of reader's inbox as the scripts on one inbox take
// them: ring, pending list.
func (c *Cache) keys(reader int64) []string {
	return []string{c.inboxKey(reader), c.pendingKey(reader)}
}

// RemoveFromInbox removes ids from reader's inbox.
func (c *Cache) RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error {
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: remove from inbox %d: %w", reader, err)
	}
	if len(ids) == 0 {
		return nil
	}
	err := c.remove.Run(ctx, c.client, c.keys(reader), packIDs(ids), c.maxArg).Err()
	if err != nil && !errors.Is(err, redis.Nil) { // nil: no inbox to remove from
		return fmt.Errorf("rediscache: remove %d ids from inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// InboxBounds returns the newest and oldest id in reader's inbox, in one
// round trip.
func (c *Cache) InboxBounds(ctx context.Context, reader int64) (newest, oldest int64, exists bool, err error) {
	b, err := c.bounds.Run(ctx, c.client, c.keys(reader), c.maxArg).Int64Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("rediscache: bounds of inbox %d: %w", reader, err)
	case len(b) == 0:
		return 0, 0, true, nil
	case len(b) != 2:
		return 0, 0, false, fmt.Errorf("rediscache: bounds of inbox %d: reply %v is not two ids", reader, b)
	}
	return b[0], b[1], true, nil
}

// DropInbox deletes reader's inbox.
func (c *Cache) DropInbox(ctx context.Context, reader int64) error {
	// One DEL of two keys of one hash tag: a single slot.
	if err := c.client.Del(ctx, c.keys(reader)...).Err(); err != nil {
		return fmt.Errorf("rediscache: drop inbox %d: %w", reader, err)
	}
	return nil
}
