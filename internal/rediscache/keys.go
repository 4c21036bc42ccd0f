package rediscache

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// An inbox is two keys of one hash tag: its ring,
// inbox2:{g<group>}:<reader>, and its pending list, the ring's key and
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

// keys returns the keys of reader's inbox as the scripts on one inbox take
// them: ring, pending list.
func (c *Cache) keys(reader int64) []string {
	return []string{c.inboxKey(reader), c.pendingKey(reader)}
}
