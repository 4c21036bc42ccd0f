package shards_test

import (
	"context"
	"testing"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
)

// A handle's claim, on the handle's shard, decides who may hold it: a
// claim whose user never took the handle (its write died) is taken over
// only once older than the grace, one whose user holds it never; a
// rename releases the old claim.
func TestHandleClaims(t *testing.T) {
	feedtest.RequireServices(t)
	ctx := context.Background()
	s := openSharded(t, 4, false)
	age := func(h string) {
		t.Helper()
		db, _ := s.Shard(shards.HandleShard(s, h)).Pools()
		if _, err := db.ExecContext(ctx, "UPDATE handles SET claimed_at = claimed_at - 120000 WHERE handle = ?", h); err != nil {
			t.Fatal(err)
		}
	}
	create := func(id int64, h string) error {
		_, err := s.CreateUser(ctx, feed.User{ID: id, Name: "u", Handle: h})
		return err
	}

	// User 5's create claimed "ghost" and died before its row.
	if _, err := s.Shard(shards.HandleShard(s, "ghost")).ClaimHandle(ctx, "ghost", 5); err != nil {
		t.Fatal(err)
	}
	if err := create(6, "ghost"); feed.ErrorCode(err) != feed.EHANDLETAKEN {
		t.Fatalf("a young claim without its row: %v; want handle_taken (its write may be in flight)", err)
	}
	if _, err := s.UserByHandle(ctx, "ghost"); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("by handle while only claimed: %v; want not found", err)
	}
	age("ghost")
	if err := create(6, "ghost"); err != nil {
		t.Fatalf("an old claim without its row: %v; want it taken over", err)
	}
	if u, err := s.UserByHandle(ctx, "ghost"); err != nil || u.ID != 6 {
		t.Fatalf("by handle after the take-over: %+v, %v; want user 6", u, err)
	}

	// A held handle stays its holder's, however old its claim.
	if err := create(7, "held"); err != nil {
		t.Fatal(err)
	}
	age("held")
	if err := create(8, "held"); feed.ErrorCode(err) != feed.EHANDLETAKEN {
		t.Fatalf("an old claim whose user holds it: %v; want handle_taken", err)
	}
	if err := create(7, "held"); feed.ErrorCode(err) != feed.ECONFLICT {
		t.Fatalf("user 7 again: %v; want conflict", err)
	}
	if u, err := s.UserByHandle(ctx, "held"); err != nil || u.ID != 7 {
		t.Fatalf("a failed create of user 7 again released its handle: %+v, %v", u, err)
	}

	// A rename releases the old claim, so another user takes it at once.
	renamed := "held2"
	if u, err := s.UpdateUser(ctx, 7, feed.UserEdit{Handle: &renamed}); err != nil || u.Handle != renamed {
		t.Fatalf("rename: %+v, %v", u, err)
	}
	if _, ok, err := s.Shard(shards.HandleShard(s, "held")).HandleClaimOf(ctx, "held"); err != nil || ok {
		t.Fatalf("the old handle's claim after a rename: %v, %v; want none", ok, err)
	}
	if err := create(8, "held"); err != nil {
		t.Fatalf("the freed handle: %v", err)
	}
}
