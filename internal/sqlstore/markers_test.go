package sqlstore

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

func testMarkers(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	if m, err := s.Marker(ctx, 1); err != nil || m != (feed.Marker{}) {
		t.Fatalf("Marker(1), never set: got %+v, %v; want the zero marker", m, err)
	}
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	steps := []struct {
		set      int64
		at       time.Time
		wantID   int64
		wantTime time.Time
	}{
		{set: 10, at: t0, wantID: 10, wantTime: t0},
		{set: 20, at: t0.Add(time.Second), wantID: 20, wantTime: t0.Add(time.Second)},
		// Back, and in place: nothing moves, not even the time.
		{set: 15, at: t0.Add(2 * time.Second), wantID: 20, wantTime: t0.Add(time.Second)},
		{set: 20, at: t0.Add(3 * time.Second), wantID: 20, wantTime: t0.Add(time.Second)},
		{set: 21, at: t0.Add(4 * time.Second), wantID: 21, wantTime: t0.Add(4 * time.Second)},
	}
	for _, st := range steps {
		m, err := s.SetMarker(ctx, 1, st.set, st.at)
		if err != nil || m.LastReadID != st.wantID || !m.UpdatedAt.Equal(st.wantTime) {
			t.Fatalf("SetMarker(1, %d): got %d at %v, %v; want %d at %v", st.set, m.LastReadID, m.UpdatedAt, err, st.wantID, st.wantTime)
		}
		if got, err := s.Marker(ctx, 1); err != nil || got != m {
			t.Fatalf("Marker(1) after SetMarker(1, %d): got %+v, %v; want %+v", st.set, got, err, m)
		}
	}
	if m, err := s.Marker(ctx, 2); err != nil || m != (feed.Marker{}) {
		t.Fatalf("Marker(2), another reader: got %+v, %v; want the zero marker", m, err)
	}
}

// testMarkerRace: writers racing with random positions leave the highest,
// and none sees the marker below its own position.
func testMarkerRace(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)
	var (
		mu  sync.Mutex
		top int64
		wg  sync.WaitGroup
	)
	errs := make(chan error, 400)
	for g := range 20 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for range 20 {
				id := 1 + r.Int64N(1_000_000)
				m, err := s.SetMarker(ctx, 1, id, time.Now())
				if err != nil {
					errs <- err
					return
				}
				if m.LastReadID < id {
					t.Errorf("SetMarker(1, %d): got %d; want at least %d", id, m.LastReadID, id)
				}
				mu.Lock()
				top = max(top, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("racing SetMarker: %v", err)
	}
	if m, err := s.Marker(ctx, 1); err != nil || m.LastReadID != top {
		t.Fatalf("Marker(1) after the race: got %d, %v; want %d", m.LastReadID, err, top)
	}
}
