package degrade

import (
	"context"
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
