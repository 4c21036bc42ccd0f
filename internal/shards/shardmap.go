// Package shards spreads feedd's SQL truth over many databases by user id:
// a fixed number of logical shards (a power of two), each an ordinary
// feedd database, placed on a few servers. A user's rows live on shard
// id & (N-1); a post's id carries its author's shard in its low bits
// (feed.IDGen.NextOn), so a post is found from its id alone. Store routes
// every call of the one-database store to the shard it is about, and keeps
// what a follow, a block or a like writes on two shards in step
// (mirror.go).
package shards

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxShards bounds the number of logical shards: a post id keeps
// 12 - log2(N) bits of sequence per millisecond and shard, and 256 shards
// leave 16 ids per millisecond, shard and process.
const MaxShards = 256

// Place is where a range of logical shards lives: a server, named by a DSN
// whose database name is the prefix of the shards' databases.
type Place struct {
	From, To int // inclusive
	DSN      string
}

// Map is the layout of the logical shards over servers.
type Map struct {
	N      int
	Places []Place
}

// Of returns the shard of a user id (or of a post id: its author's).
func (m Map) Of(id int64) int { return int(id & int64(m.N-1)) }

// DSN returns where shard k lives.
func (m Map) DSN(k int) string {
	for _, p := range m.Places {
		if k >= p.From && k <= p.To {
			return p.DSN
		}
	}
	return ""
}

// Parse reads FEEDD_SHARDS and FEEDD_SHARD_DSNS: n logical shards and
// "0-31=dsn_a;32-63=dsn_b" (a single number for a range of one). Every
// shard must be placed exactly once.
func Parse(n int, spec string) (Map, error) {
	if n < 1 || n > MaxShards || bits.OnesCount(uint(n)) != 1 {
		return Map{}, fmt.Errorf("FEEDD_SHARDS is %d: want a power of two from 1 to %d", n, MaxShards)
	}
	m := Map{N: n}
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	for part := range strings.SplitSeq(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		rng, dsn, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(dsn) == "" {
			return Map{}, fmt.Errorf("FEEDD_SHARD_DSNS: %q is not FROM-TO=DSN", redactPart(part))
		}
		from, to, err := parseRange(strings.TrimSpace(rng))
		if err != nil {
			return Map{}, fmt.Errorf("FEEDD_SHARD_DSNS: %w", err)
		}
		if from < 0 || to >= n || from > to {
			return Map{}, fmt.Errorf("FEEDD_SHARD_DSNS: the range %d-%d is not within the %d shards (0-%d)", from, to, n, n-1)
		}
		for k := from; k <= to; k++ {
			if owner[k] >= 0 {
				return Map{}, fmt.Errorf("FEEDD_SHARD_DSNS: shard %d is placed twice", k)
			}
			owner[k] = len(m.Places)
		}
		m.Places = append(m.Places, Place{From: from, To: to, DSN: strings.TrimSpace(dsn)})
	}
	var missing []string
	for k, o := range owner {
		if o < 0 {
			missing = append(missing, strconv.Itoa(k))
		}
	}
	if len(missing) > 0 {
		if len(missing) > 8 {
			missing = append(missing[:8], "…")
		}
		return Map{}, fmt.Errorf("FEEDD_SHARD_DSNS places no server for shard %s: every one of the %d shards needs one", strings.Join(missing, ", "), n)
	}
	return m, nil
}

func parseRange(s string) (int, int, error) {
	a, b, isRange := strings.Cut(s, "-")
	from, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a shard number or a range FROM-TO", s)
	}
	if !isRange {
		return from, from, nil
	}
	to, err := strconv.Atoi(strings.TrimSpace(b))
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a shard number or a range FROM-TO", s)
	}
	return from, to, nil
}

// redactPart keeps a malformed part's password out of an error message:
// only what comes before an '@' or a "password" keyword is risky, so the
// whole part is replaced when it holds either.
func redactPart(s string) string {
	if strings.ContainsAny(s, "@:") || strings.Contains(strings.ToLower(s), "password") {
		return "(a part that may hold a password)"
	}
	return s
}
