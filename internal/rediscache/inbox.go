package rediscache

import (
	"context"
	"errors"
	"fmt"
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

// inboxHeaderLua starts every inbox script: it reads the header of
// KEYS[1]. A missing key reads as version 0, which each script treats as
// absent.
const inboxHeaderLua = `
local key = KEYS[1]
local hdr = redis.call('GETRANGE', key, 0, 20)
local version, state, cap, head, count, newest = 0, 0, 0, 0, 0, 0
if #hdr == 21 then
  version, state, cap, head, count, newest = struct.unpack('>BBI4I4I4I7', hdr)
end
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

// pushScript adds one id to one inbox if it exists, dropping the oldest id
// past InboxMax and marking the inbox incomplete if it did. It is the
// fan-out's inner loop, so the common case — a new post, newer than every
// id in the inbox — is three calls on one small string: read the header,
// write one slot (in a full ring, the oldest id's), write the header. The
// rest — a late id (an older fan-out finishing after a newer one), a
// repeated one, a ring that must grow — goes through ringLua's insert.
//
// KEYS[1] inbox; ARGV[1] the post id, 7 bytes; ARGV[2] InboxMax.
const pushScript = inboxHeaderLua + `
if version ~= 1 then
  return 0
end
local bin = ARGV[1]
local id = struct.unpack('>I7', bin)
local max = tonumber(ARGV[2])
if id > newest and (count < cap or cap >= max) then
  head = (head - 1) % cap
  redis.call('SETRANGE', key, 21 + 7 * head, bin)
  if count < cap then
    count = count + 1
  else
    state = 1 -- the slot was the oldest id's
  end
  if count > max then -- InboxMax was lowered since the fill
    count, state = max, 1
  end
  redis.call('SETRANGE', key, 1, struct.pack('>BI4I4I4I7', state, cap, head, count, id))
  return 1
end
` + ringLua + ringWriteLua + `
if insert(id, bin, max) then
  save()
end
return 1
`

// addScript adds ids to one inbox if it exists, trims it to InboxMax and
// marks it incomplete if it trimmed or if asked to. A few ids (a smart
// refresh's) are inserted one by one; more (a follow backfill's) are
// merged with the whole ring, which is then rewritten.
//
// KEYS[1] inbox; ARGV[1] the ids, 7 bytes each, newest first, no
// duplicates; ARGV[2] InboxMax; ARGV[3] "1" to mark incomplete.
const addScript = inboxHeaderLua + `
if version ~= 1 then
  return 0
end
` + ringLua + ringWriteLua + `
local add, max = ARGV[1], tonumber(ARGV[2])
if ARGV[3] == '1' then
  state = 1
end
if #add <= 7 * 16 then
  for j = 0, #add / 7 - 1 do
    insert(at(add, j), string.sub(add, 7 * j + 1, 7 * j + 7), max)
  end
  save()
  return 1
end
local s = read(0, count)
local parts, from, n = {}, 0, count
for j = 0, #add / 7 - 1 do
  local k, found = search(s, from, count, at(add, j))
  if not found then
    parts[#parts + 1] = string.sub(s, 7 * from + 1, 7 * k)
    parts[#parts + 1] = string.sub(add, 7 * j + 1, 7 * j + 7)
    from, n = k, n + 1
  end
end
parts[#parts + 1] = string.sub(s, 7 * from + 1)
local ids = table.concat(parts)
if n > max then
  ids, state = string.sub(ids, 1, 7 * max), 1
end
rewrite(ids, max)
save()
return 1
`

// removeScript removes ids from one inbox: a few (a read's lazy delete)
// one by one, more (an unfollow's) by rewriting the ring without them.
//
// KEYS[1] inbox; ARGV[1] the ids, 7 bytes each, newest first, no
// duplicates.
const removeScript = inboxHeaderLua + `
if version ~= 1 then
  return 0
end
` + ringLua + ringWriteLua + `
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

// pageScript reads a page of one inbox. A first page is one range after
// the header. A later one must find before first; its cursor is most
// often a few pages down (infinite scroll), so one read takes the newest
// 64 ids and the n after them, and only a cursor below those is located,
// whose last read takes the page along.
//
// KEYS[1] inbox; ARGV[1] before (0: from the newest); ARGV[2] n. Returns
// nil if the inbox is absent, else the state byte and the ids, 7 bytes
// each, newest first.
const pageScript = inboxHeaderLua + `
if version ~= 1 then
  return false
end
` + ringLua + `
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
// empty, else its newest and oldest id.
//
// KEYS[1] inbox.
const boundsScript = inboxHeaderLua + `
if version ~= 1 then
  return false
end
if count == 0 then
  return {}
end
` + ringLua + `
return {newest, at(read(count - 1, 1), 0)}
`

// inboxKey returns the key of reader's inbox. The reader id is the hash
// tag, so that an inbox's commands, and a script on it, stay on one slot.
func (c *Cache) inboxKey(reader int64) string {
	return string(c.appendInboxKey(make([]byte, 0, len(c.inboxPrefix)+22), reader))
}

func (c *Cache) appendInboxKey(b []byte, reader int64) []byte {
	b = append(b, c.inboxPrefix...)
	b = append(b, '{')
	b = strconv.AppendInt(b, reader, 10)
	return append(b, '}')
}

// inboxKeys returns the keys of readers' inboxes, all cut from one string
// so that a batch of a thousand keys costs a handful of allocations.
func (c *Cache) inboxKeys(readers []int64) []string {
	var all strings.Builder
	all.Grow(len(readers) * (len(c.inboxPrefix) + 12))
	ends := make([]int, len(readers))
	var scratch [32]byte
	for i, r := range readers {
		all.Write(c.appendInboxKey(scratch[:0], r))
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
	reply, err := c.page.Run(ctx, c.client, []string{c.inboxKey(reader)}, max(before, 0), max(n, 0)).Text()
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
// ids, in one SET; it is complete only if complete is set and nothing was
// trimmed.
func (c *Cache) FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error {
	if err := checkIDs(ids...); err != nil {
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
	if err := c.client.Set(ctx, c.inboxKey(reader), v, max(ttl, 0)).Err(); err != nil {
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
	if err := checkIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: add to inbox %d: %w", reader, err)
	}
	if len(ids) == 0 && !markIncomplete {
		return nil
	}
	mark := "0"
	if markIncomplete {
		mark = "1"
	}
	err := c.add.Run(ctx, c.client, []string{c.inboxKey(reader)}, packIDs(ids), c.maxArg, mark).Err()
	if err != nil {
		return fmt.Errorf("rediscache: add %d ids to inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// PushToInboxes adds id to the inbox of each reader whose inbox exists, in
// one pipelined round trip of one EVALSHA per reader.
func (c *Cache) PushToInboxes(ctx context.Context, readers []int64, id int64) error {
	if err := checkIDs(id); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	if len(readers) == 0 {
		return nil
	}
	keys := c.inboxKeys(readers)
	// One argument list for every reader: go-redis copies it into each
	// command, so sharing it saves a slice and a boxed id per reader.
	args := []any{string(appendID(nil, id)), c.maxArg}

	cmds, err := c.pushAll(ctx, keys, args, c.push.EvalSha)
	if err == nil {
		return nil
	}
	// A node that lost its scripts (restart, SCRIPT FLUSH, failover)
	// answers NOSCRIPT; any other error fails the batch, which is safe to
	// redo because a push is idempotent.
	var missing []string
	for i, cmd := range cmds {
		switch err := cmd.Err(); {
		case err == nil:
		case isNoScript(err):
			missing = append(missing, keys[i])
		default:
			return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	// Load the script everywhere so that the next batches find it, then
	// redo the missed inboxes with EVAL, which needs no cache: even if the
	// load failed on some node, this batch completes.
	loadErr := c.loadPushScript(ctx)
	if _, err := c.pushAll(ctx, missing, args, c.push.Eval); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes (%d without the script): %w",
			len(readers), len(missing), errors.Join(err, loadErr))
	}
	return nil
}

// pushAll runs the push script on every key in one pipeline, with EVALSHA
// or EVAL, and returns the commands in the order of keys.
func (c *Cache) pushAll(ctx context.Context, keys []string, args []any,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(keys))
	p := c.client.Pipeline()
	for i := range keys {
		cmds[i] = eval(ctx, p, keys[i:i+1:i+1], args...)
	}
	_, err := p.Exec(ctx)
	return cmds, err
}

// loadPushScript loads the push script on every node that may run it. A
// ClusterClient's SCRIPT LOAD already goes to every node, replicas
// included, so that a promoted replica has it too; a Ring's goes to one
// shard, so each is asked.
func (c *Cache) loadPushScript(ctx context.Context) error {
	if ring, ok := c.client.(*redis.Ring); ok {
		return ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			return c.push.Load(ctx, shard).Err()
		})
	}
	return c.push.Load(ctx, c.client).Err()
}

// RemoveFromInbox removes ids from reader's inbox.
func (c *Cache) RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error {
	if err := checkIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: remove from inbox %d: %w", reader, err)
	}
	if len(ids) == 0 {
		return nil
	}
	if err := c.remove.Run(ctx, c.client, []string{c.inboxKey(reader)}, packIDs(ids)).Err(); err != nil {
		return fmt.Errorf("rediscache: remove %d ids from inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// InboxBounds returns the newest and oldest id in reader's inbox, in one
// round trip.
func (c *Cache) InboxBounds(ctx context.Context, reader int64) (newest, oldest int64, exists bool, err error) {
	b, err := c.bounds.Run(ctx, c.client, []string{c.inboxKey(reader)}).Int64Slice()
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
	if err := c.client.Del(ctx, c.inboxKey(reader)).Err(); err != nil {
		return fmt.Errorf("rediscache: drop inbox %d: %w", reader, err)
	}
	return nil
}
