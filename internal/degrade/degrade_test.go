package degrade

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
	want := `
# HELP feedd_degradation_switch 1 while a degradation switch (L1-L4) is on in this process.
# TYPE feedd_degradation_switch gauge
feedd_degradation_switch{switch="L1"} 0
feedd_degradation_switch{switch="L2"} 1
feedd_degradation_switch{switch="L3"} 0
feedd_degradation_switch{switch="L4"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "feedd_degradation_switch"); err != nil {
		t.Fatal(err)
	}
	var nilSwitches *Switches
	if nilSwitches.On(L1) || !nilSwitches.Enrich() {
		t.Fatal("nil switches are not all off")
	}
}
