package limit

import (
	"context"
	"time"
)

// Shedder bounds the requests of each class in flight. A request beyond
// the bound waits up to Wait for a slot (a short queue trades a little
// latency for success when the excess is a burst), then is shed. A nil
// *Shedder admits everything.
type Shedder struct {
	slots map[Class]chan struct{}
	wait  time.Duration
}

// The bounds feedd's flags start from: no more reads and writes in flight
// per process than these, and a wait of DefaultShedWait for a slot. The
// package itself has none (NewShedder bounds only what it is given).
const (
	DefaultMaxReads  = 512
	DefaultMaxWrites = 128
	DefaultShedWait  = 100 * time.Millisecond
)

// NewShedder bounds each class of max to that many requests in flight (0:
// unbounded) with wait the longest a request queues for a slot.
func NewShedder(max map[Class]int, wait time.Duration) *Shedder {
	s := &Shedder{slots: map[Class]chan struct{}{}, wait: wait}
	for c, n := range max {
		if n > 0 {
			s.slots[c] = make(chan struct{}, n)
		}
	}
	return s
}

// Acquire takes a slot of class and returns the function that gives it
// back, or ok=false when none freed up within the wait (or ctx ended).
func (s *Shedder) Acquire(ctx context.Context, class Class) (release func(), ok bool) {
	if s == nil {
		return func() {}, true
	}
	ch := s.slots[class]
	if ch == nil {
		return func() {}, true
	}
	release = func() { <-ch }
	select {
	case ch <- struct{}{}:
		return release, true
	default:
	}
	if s.wait <= 0 {
		return nil, false
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return release, true
	case <-t.C:
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
}

// InFlight returns how many requests of class hold a slot.
func (s *Shedder) InFlight(class Class) int {
	if s == nil {
		return 0
	}
	return len(s.slots[class])
}
