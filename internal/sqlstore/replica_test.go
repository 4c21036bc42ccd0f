package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestReplicaServes: which reads the replica takes, from what the
// heartbeat learnt of it and when the reader last wrote.
func TestReplicaServes(t *testing.T) {
	now := time.Now()
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		seen      time.Time // the newest heartbeat the replica showed
		down      bool
		lastWrite time.Time // zero: the reader wrote nothing lately
		want      bool
	}{
		{name: "never caught up", want: false},
		{name: "current", seen: now, want: true},
		{name: "behind within the max lag", seen: now.Add(-9 * time.Second), want: true},
		{name: "behind past the max lag", seen: now.Add(-11 * time.Second), want: false},
		{name: "a failed read", seen: now, down: true, want: false},
		{name: "past the reader's write", seen: now, lastWrite: now.Add(-time.Second), want: true},
		{name: "not past the reader's write", seen: now.Add(-time.Second), lastWrite: now.Add(-time.Second), want: false},
		{name: "within the clock margin of it", seen: now, lastWrite: now.Add(-ClockSkew / 2), want: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &lagWatch{}
			w.maxLag.Store(int64(10 * time.Second))
			if !c.seen.IsZero() {
				w.seen.Store(c.seen.UnixMicro())
			}
			w.down.Store(c.down)
			if got := w.serves(feed.WithLastWrite(ctx, c.lastWrite)); got != c.want {
				t.Errorf("serves = %v; want %v", got, c.want)
			}
		})
	}
}
