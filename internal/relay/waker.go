package relay

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Notifier tells the relays of every process that outbox events
// committed (PostgreSQL's NOTIFY); it returns errors.ErrUnsupported
// where the database cannot.
type Notifier interface {
	NotifyOutbox(ctx context.Context) error
}

// Waker wakes the relays of other processes after a post commits, for a
// process that writes posts but runs no relay (the serve role): a process
// with a relay wakes its own (Relay.Notify). No post waits for it. The
// wake-ups asked for while one is sent, or in the wakeGap after it, are
// answered by one more: a stream of posts costs at most one notification
// per wakeGap, and wakes each relay at most that often.
type Waker struct {
	n      Notifier
	logger *slog.Logger
	kick   chan struct{}
}

// wakeGap bounds how often a Waker notifies: 200 a second, so that a busy
// API does not spend the database's CPU (and the relays' transactions) on
// a notification per post, at a cost of at most 5 ms to a post's wait.
const wakeGap = 5 * time.Millisecond

// NewWaker returns a Waker that notifies through n.
func NewWaker(logger *slog.Logger, n Notifier) *Waker {
	return &Waker{n: n, logger: logger.With("component", "relay"), kick: make(chan struct{}, 1)}
}

// Notify asks for a wake-up of the relays; it never blocks.
func (w *Waker) Notify() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run sends the wake-ups Notify asks for until ctx is done. Where the
// database cannot notify it returns at once: the relays poll.
func (w *Waker) Run(ctx context.Context) error {
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
		}
		err := w.n.NotifyOutbox(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errors.ErrUnsupported):
			return nil
		case err != nil && !failing:
			// The relays' poll finds the posts; said once per outage.
			w.logger.Warn("could not wake the relays; they find new posts at their poll", "err", err)
		case err == nil && failing:
			w.logger.Info("waking the relays again")
		}
		failing = err != nil
		if !sleep(ctx, wakeGap, nil) {
			return nil
		}
	}
}
