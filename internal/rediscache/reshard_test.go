package rediscache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterResharding moves the slot of an inbox from one master to
// another while the inbox is written, the way redis-cli --cluster
// reshard does (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE): a
// push while the key is still on the source, one after it moved (the
// source answers ASK), one after the slot changed hands (MOVED). Every
// push lands, the inbox reads back complete, and the slot is moved back.
func TestClusterResharding(t *testing.T) {
	newClient := testCluster(t)
	client := newClient()
	cc := client.(*redis.ClusterClient)
	prefix := randomPrefix()
	// Groups of its own: the slot is not the one other tests' inboxes of
	// the default groups are written to while it moves.
	c := New(client, Options{Prefix: prefix, InboxMax: 100, InboxGroups: 1 << 30})
	t.Cleanup(func() {
		deleteKeys(t, client, prefix)
		c.Close()
	})
	ctx := t.Context()
	const reader = 42
	key := c.inboxKey(reader)
	if err := c.FillInbox(ctx, reader, []int64{1, 2}, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	src, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// ForEachMaster calls back concurrently: collect, then choose.
	var mu sync.Mutex
	var others []string
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		if addr := n.Options().Addr; addr != src.Options().Addr {
			mu.Lock()
			others = append(others, addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil || len(others) == 0 {
		t.Fatalf("no second master: %v", err)
	}
	slices.Sort(others)
	dst := redis.NewClient(&redis.Options{Addr: others[0]})
	src = redis.NewClient(&redis.Options{Addr: src.Options().Addr})
	t.Cleanup(func() { src.Close(); dst.Close() })

	next := int64(3)
	push := func(when string) {
		t.Helper()
		if err := c.PushToInboxes(ctx, []int64{reader}, next); err != nil {
			t.Fatalf("push %d %s: %v", next, when, err)
		}
		next++
	}
	move(t, ctx, cc, slot, key, src, dst, push)
	move(t, ctx, cc, slot, key, dst, src, push) // and back, leaving the Cluster as it was

	page, err := c.InboxPage(ctx, reader, 0, 100)
	want := []int64{8, 7, 6, 5, 4, 3, 2, 1}
	if err != nil || !slices.Equal(page.IDs, want) {
		t.Fatalf("inbox after two reshards = %v, %v; want %v", page.IDs, err, want)
	}
}

// move migrates slot (holding key) from src to dst, calling push at each
// step of the migration.
func move(t *testing.T, ctx context.Context, cc *redis.ClusterClient, slot int64, key string, src, dst *redis.Client, push func(string)) {
	t.Helper()
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	do := func(n *redis.Client, args ...any) {
		t.Helper()
		if err := n.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%s %v: %v", n.Options().Addr, args, err)
		}
	}
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	push("while the slot is migrating, key on the source")
	// Every key of the slot moves, as redis-cli moves them: the inbox's
	// ring and pending list, and whatever else shares the hash tag (other
	// tests' inboxes of the same group).
	keys, err := src.ClusterGetKeysInSlot(ctx, int(slot), 10_000).Result()
	if err != nil || !slices.Contains(keys, key) {
		t.Fatalf("keys in slot %d = %v, %v; want %s among them", slot, keys, err, key)
	}
	host, port, _ := strings.Cut(dst.Options().Addr, ":")
	args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	do(src, args...)
	push("after the key moved (ASK)")
	// The new owner first, then everyone: the order redis-cli uses.
	do(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	do(src, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
	})
	if err != nil {
		t.Fatalf("announce slot %d: %v", slot, err)
	}
	push(fmt.Sprintf("after slot %d moved to %s (MOVED)", slot, dst.Options().Addr))
}
