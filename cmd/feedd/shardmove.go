package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/shards"
)

// feedd shards move SHARD --to DSN: the command's glue; the move is
// shards.Move. The shards command (feedd shards status) hands it the
// deployment's map, from FEEDD_SHARDS and FEEDD_SHARD_DSNS:
//
//	m, err := cfg.shardMap()
//	if err != nil { … }
//	return moveShard(ctx, m, args, stdout, stderr)
//
// It exits 0 once moved, 2 on a usage error, and 1 when the move failed
// (the shard then stays where it was, and serves).

const moveUsage = `usage: feedd shards move SHARD --to DSN

Copies logical shard SHARD to the server DSN reaches while it keeps serving,
then switches every process to it with the shard's writes paused for the last
changes (the pause is measured and printed). DSN names the shards' database
prefix on that server, as a place of FEEDD_SHARD_DSNS does, e.g.
root:pw@tcp(db3:3306)/feedd; the shard's database there is <prefix>_s<SHARD>.
Afterwards set FEEDD_SHARD_DSNS to the value printed, so that new processes
start at the new place (running ones follow the move on their own).
`

func moveShard(ctx context.Context, m shards.Map, args []string, stdout, stderr io.Writer) int {
	f := flag.NewFlagSet("feedd shards move", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.Usage = func() { fmt.Fprint(stderr, moveUsage) }
	to := f.String("to", "", "the DSN of the server and database prefix to move the shard to")
	// SHARD may come before the flags or after them.
	var pos []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = args[:1], args[1:]
	}
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	pos = append(pos, f.Args()...)
	if len(pos) != 1 || *to == "" {
		fmt.Fprint(stderr, moveUsage)
		return 2
	}
	k, err := strconv.Atoi(pos[0])
	if err != nil || k < 0 || k >= m.N {
		fmt.Fprintf(stderr, "feedd shards move: %q is not a shard: want a number from 0 to %d\n", pos[0], m.N-1)
		return 2
	}
	log := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, a...))
	}
	rep, err := shards.Move(ctx, m, k, *to, log)
	if err != nil {
		shown, _ := redactURLs(err.Error())
		fmt.Fprintf(stderr, "feedd shards move: %s\n", shown)
		return 1
	}
	fmt.Fprintf(stdout, "shard %d moved in %s; its writes paused for %s\n", k, rep.Took.Round(time.Millisecond), rep.Pause.Round(time.Millisecond))
	tables := make([]string, 0, len(rep.Rows))
	for t := range rep.Rows {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	for _, t := range tables {
		fmt.Fprintf(stdout, "  %-14s %d rows\n", t, rep.Rows[t])
	}
	fmt.Fprintf(stdout, "set FEEDD_SHARD_DSNS=%s\n", redactSpec(rep.Map))
	return 0
}

// redactSpec is m as FEEDD_SHARD_DSNS says it, each place's password
// shown as ***: the operator knows it, the terminal's scrollback need not.
func redactSpec(m shards.Map) string {
	parts := strings.Split(m.Spec(), ";")
	for i, p := range parts {
		rng, dsn, _ := strings.Cut(p, "=")
		shown, _ := redactURLs(dsn)
		if shards.BackendOf(dsn) == shards.Postgres && !strings.Contains(dsn, "://") {
			shown, _ = redactConnString(dsn)
		}
		parts[i] = rng + "=" + shown
	}
	return strings.Join(parts, ";")
}
