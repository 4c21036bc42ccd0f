package degrade

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/inmemcache"
)

func TestSwitchesReachOtherProcesses(t *testing.T) {
	ctx := context.Background()
	shared := inmemcache.New(inmemcache.Options{})
	defer shared.Close()
	logger := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	a := New(logger, shared, reg)
	b := New(logger, shared, nil)

	if ok, err := a.Set(ctx, map[Switch]bool{L2: true, L3: true}); err != nil || !ok {
		t.Fatalf("set: shared %v, err %v", ok, err)
	}
	if !a.On(L2) || !a.On(L3) || a.On(L1) || a.Level() != 3 {
		t.Fatalf("a = %v level %d; want L2 and L3 on, level 3", a.Snapshot(), a.Level())
	}
	if b.On(L2) {
		t.Fatal("b saw the change before polling")
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.Run(runCtx, 5*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for !(b.On(L2) && b.On(L3)) {
		if time.Now().After(deadline) {
			t.Fatalf("b = %v; want the switches a set", b.Snapshot())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := a.Set(ctx, map[Switch]bool{L3: false}); err != nil {
		t.Fatal(err)
	}
	for b.On(L3) {
		if time.Now().After(deadline) {
			t.Fatal("b did not see L3 turned off")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	<-done
	if !b.On(L2) {
		t.Fatal("turning L3 off turned L2 off too")
	}
	if _, err := a.Set(ctx, map[Switch]bool{"L9": true}); err == nil {
		t.Fatal("an unknown switch was accepted")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "feedd_degradation_switch" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if got["L1"] != 0 || got["L2"] != 1 || got["L3"] != 0 || got["L4"] != 0 || len(got) != 4 {
		t.Fatalf("feedd_degradation_switch = %v; want only L2 at 1", got)
	}
	var nilSwitches *Switches
	if nilSwitches.On(L1) || !nilSwitches.Enrich() {
		t.Fatal("nil switches are not all off")
	}
}

// flakyStore fails while down is set.
type flakyStore struct {
	Store
	down bool
}

func (f *flakyStore) Get(ctx context.Context, k string) (string, bool, error) {
	if f.down {
		return "", false, errors.New("redis down")
	}
	return f.Store.Get(ctx, k)
}

func (f *flakyStore) Set(ctx context.Context, k, v string, ttl time.Duration) error {
	if f.down {
		return errors.New("redis down")
	}
	return f.Store.Set(ctx, k, v, ttl)
}

// TestChangeDuringCacheOutage: a switch set while the cache is down holds
// here, survives the cache's return (no older value pulled over it), and
// is then shared.
func TestChangeDuringCacheOutage(t *testing.T) {
	ctx := context.Background()
	mem := inmemcache.New(inmemcache.Options{})
	defer mem.Close()
	logger := slog.New(slog.DiscardHandler)
	fs := &flakyStore{Store: mem}
	a := New(logger, fs, nil)
	if _, err := a.Set(ctx, map[Switch]bool{L1: true}); err != nil {
		t.Fatal(err)
	}
	fs.down = true
	if shared, err := a.Set(ctx, map[Switch]bool{L3: true}); err != nil || shared {
		t.Fatalf("set during the outage: shared %v, err %v; want held locally", shared, err)
	}
	if err := a.Sync(ctx); err == nil {
		t.Fatal("sync during the outage succeeded")
	}
	if !a.On(L3) || !a.On(L1) {
		t.Fatalf("switches during the outage = %v; want L1 and L3", a.Snapshot())
	}
	fs.down = false
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.On(L3) {
		t.Fatal("the cache's older switches were pulled over the change made during the outage")
	}
	b := New(logger, mem, nil)
	if err := b.Sync(ctx); err != nil || !b.On(L3) || !b.On(L1) {
		t.Fatalf("another process after the outage = %v (%v); want L1 and L3", b.Snapshot(), err)
	}
}
