package main

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/testenv"
)

// feedd shards move prints the measured pause and the FEEDD_SHARD_DSNS to
// set, with the passwords hidden; a bad shard or a missing --to is a
// usage error.
func TestShardMoveCommand(t *testing.T) {
	feedtest.RequireServices(t)
	ctx := context.Background()
	m, err := shards.Parse(2, testenv.ShardSpec(t, 2, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := shards.Migrate(ctx, m); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	for _, args := range [][]string{{"1"}, {"7", "--to", m.DSN(0)}, {"x", "--to", m.DSN(0)}} {
		if code := moveShard(ctx, m, args, &out, &errs); code != 2 {
			t.Errorf("feedd shards move %v: exit %d, want 2", args, code)
		}
	}
	// Shard 1 to the first server, beside shard 0 (the same prefix):
	// the new map places both there.
	_, _, prefix, err := shards.ShardDSN(m.DSN(0), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("mysql", testenv.MySQLDSN()); err == nil {
			db.Exec("DROP DATABASE IF EXISTS " + shards.DatabaseName(prefix, 1))
			db.Close()
		}
	})
	errs.Reset()
	if code := moveShard(ctx, m, []string{"1", "--to", m.DSN(0)}, &out, &errs); code != 0 {
		t.Fatalf("feedd shards move 1: exit %d\n%s", code, errs.String())
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errs.String())
	if !strings.Contains(out.String(), "writes paused for ") {
		t.Errorf("the output does not say the pause:\n%s", out.String())
	}
	want := "set FEEDD_SHARD_DSNS=0-1=" + m.DSN(0) + "\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the output does not say %q:\n%s", want, out.String())
	}
	if got := redactSpec(m.With(1, "feedd:s3cret@tcp(db3:3306)/feedd")); strings.Contains(got, "s3cret") {
		t.Errorf("redactSpec shows the password: %s", got)
	}
}
