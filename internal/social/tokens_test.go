package social

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// standingStore counts the SQL reads of token generations, can fail them
// as an open breaker does, and can run a hook right after a read (to
// interleave a change between a reader's SQL read and its cache fill).
type standingStore struct {
	Store
	reads     atomic.Int64
	down      atomic.Bool
	afterRead atomic.Pointer[func()]
}

func (s *standingStore) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	if s.down.Load() {
		return 0, sqlbreaker.Unavailable(errors.New("connection refused"))
	}
	s.reads.Add(1)
	gen, err := s.Store.TokenGeneration(ctx, user)
	if f := s.afterRead.Swap(nil); f != nil {
		(*f)()
	}
	return gen, err
}

// standingWorld is processes sharing one SQL store and one cache, on one
// clock.
type standingWorld struct {
	clock *feedtest.Clock
	store *standingStore
	cache *feedtest.FailingCache
}

func newStandingWorld(t *testing.T) *standingWorld {
	t.Helper()
	clock := feedtest.NewClock(time.Now())
	cache := inmemcache.New(inmemcache.Options{Now: clock.Now})
	t.Cleanup(func() { cache.Close() })
	return &standingWorld{clock: clock, store: &standingStore{Store: testStore(t)}, cache: &feedtest.FailingCache{Cache: cache}}
}

func (w *standingWorld) process() *Service {
	svc := New(slog.New(slog.DiscardHandler), Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePush}},
		w.store, w.cache, noTimeline{}, feed.NewIDGen(nil), nil)
	svc.now = w.clock.Now
	return svc
}

func wantGeneration(t *testing.T, svc *Service, user, want int64) {
	t.Helper()
	if gen, err := svc.TokenGeneration(context.Background(), user); err != nil || gen != want {
		t.Fatalf("TokenGeneration(%d) = %d, %v; want %d", user, gen, err, want)
	}
}

func wantNoUser(t *testing.T, svc *Service, user int64) {
	t.Helper()
	if _, err := svc.TokenGeneration(context.Background(), user); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("TokenGeneration(%d): %v; want not found", user, err)
	}
}

// TestTokenStanding: two processes share SQL and the cache. A user's
// creation and a revocation made through one reach the other once its copy
// is TokenCheckTTL old, and the acting process at once; a busy user's
// checks within TokenCheckTTL cost no SQL read and no cache call, and
// across processes the user costs SQL one read, not one per process.
func TestTokenStanding(t *testing.T) {
	ctx := context.Background()
	w := newStandingWorld(t)
	a, b := w.process(), w.process()

	// A user nobody has heard of: both processes ask SQL once, then share
	// the answer through the cache and their own copy.
	wantNoUser(t, b, 42)
	wantNoUser(t, a, 42)
	if n := w.store.reads.Load(); n != 1 {
		t.Fatalf("SQL reads for an unknown user checked by two processes: %d; want 1", n)
	}
	if _, err := a.CreateUser(ctx, 42, "late", ""); err != nil {
		t.Fatal(err)
	}
	wantGeneration(t, a, 42, 0) // the acting process: at once
	wantNoUser(t, b, 42)        // the other: its copy is still fresh
	w.clock.Add(TokenCheckTTL)
	wantGeneration(t, b, 42, 0)

	reads, gets := w.store.reads.Load(), w.cache.Gets.Load()
	for range 1000 {
		wantGeneration(t, b, 42, 0)
	}
	if n, m := w.store.reads.Load()-reads, w.cache.Gets.Load()-gets; n != 0 || m != 0 {
		t.Fatalf("1000 checks of one user within a second: %d SQL reads, %d cache reads; want 0, 0", n, m)
	}

	if err := a.RevokeTokens(ctx, 42); err != nil {
		t.Fatal(err)
	}
	wantGeneration(t, a, 42, 1)
	wantGeneration(t, b, 42, 0)
	w.clock.Add(TokenCheckTTL - time.Nanosecond)
	wantGeneration(t, b, 42, 0)
	w.clock.Add(time.Nanosecond)
	reads = w.store.reads.Load()
	wantGeneration(t, b, 42, 1)
	if n := w.store.reads.Load() - reads; n != 0 {
		t.Fatalf("the other process learned of the revocation with %d SQL reads; want 0 (from the cache)", n)
	}

	// The truth read on purpose (a token newer than the copy) replaces the
	// copy at once.
	if err := a.RevokeTokens(ctx, 42); err != nil {
		t.Fatal(err)
	}
	wantGeneration(t, b, 42, 1)
	if gen, err := b.CurrentTokenGeneration(ctx, 42); err != nil || gen != 2 {
		t.Fatalf("CurrentTokenGeneration = %d, %v; want 2", gen, err)
	}
	wantGeneration(t, b, 42, 2)
	if _, err := b.CurrentTokenGeneration(ctx, 43); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("CurrentTokenGeneration of an unknown user: %v; want not found", err)
	}

	// A user created behind the service's back (a bulk load) whose token
	// is then minted: the mint's read fills the cache, so the token's uses
	// on any process read no more SQL.
	if _, err := w.store.CreateUser(ctx, feed.User{ID: 44, Name: "bulk"}); err != nil {
		t.Fatal(err)
	}
	if gen, err := a.CurrentTokenGeneration(ctx, 44); err != nil || gen != 0 {
		t.Fatalf("CurrentTokenGeneration of a bulk-loaded user = %d, %v; want 0", gen, err)
	}
	reads = w.store.reads.Load()
	w.clock.Add(TokenCheckTTL)
	wantGeneration(t, a, 44, 0)
	wantGeneration(t, b, 44, 0)
	if n := w.store.reads.Load() - reads; n != 0 {
		t.Fatalf("uses of a token just minted: %d SQL reads; want 0", n)
	}

	if err := a.RevokeTokens(ctx, 7); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("RevokeTokens of an unknown user: %v; want not found", err)
	}
}

// TestTokenStandingFillRace: a process that read SQL just before a
// revocation fills the cache only if the revocation has not written it, so
// a third process reads the revocation, not the older answer.
func TestTokenStandingFillRace(t *testing.T) {
	ctx := context.Background()
	w := newStandingWorld(t)
	a, b, c := w.process(), w.process(), w.process()
	if _, err := a.CreateUser(ctx, 5, "u", ""); err != nil {
		t.Fatal(err)
	}
	if err := w.cache.Cache.Set(ctx, standingKey(5), "", time.Nanosecond); err != nil { // as if the entry had expired
		t.Fatal(err)
	}
	w.clock.Add(time.Millisecond)
	revoke := func() {
		if err := a.RevokeTokens(ctx, 5); err != nil {
			t.Error(err)
		}
	}
	w.store.afterRead.Store(&revoke)
	wantGeneration(t, b, 5, 0) // read before the revocation
	wantGeneration(t, c, 5, 1)
}

// TestTokenStandingOutages: with the cache down every check reads SQL;
// with SQL down as well a process answers from its last known standing,
// and with nothing known, "unavailable". A revocation whose cache write
// fails is stored, and says it could not tell everyone.
func TestTokenStandingOutages(t *testing.T) {
	ctx := context.Background()
	w := newStandingWorld(t)
	a, b := w.process(), w.process()
	if _, err := a.CreateUser(ctx, 9, "u", ""); err != nil {
		t.Fatal(err)
	}
	wantGeneration(t, b, 9, 0)

	w.cache.Down.Store(true)
	err := a.RevokeTokens(ctx, 9)
	if feed.ErrorCode(err) != feed.EUNAVAILABLE {
		t.Fatalf("RevokeTokens with the cache down: %v; want unavailable", err)
	}
	w.clock.Add(TokenCheckTTL)
	wantGeneration(t, b, 9, 1) // from SQL: the revocation is stored

	w.store.down.Store(true)
	w.clock.Add(tokenLastKnown - time.Nanosecond)
	wantGeneration(t, b, 9, 1) // the last known answer
	if _, err := b.TokenGeneration(ctx, 10); feed.ErrorCode(err) != feed.EUNAVAILABLE {
		t.Fatalf("an unknown user with SQL and the cache down: %v; want unavailable", err)
	}
	w.clock.Add(time.Nanosecond)
	if _, err := b.TokenGeneration(ctx, 9); feed.ErrorCode(err) != feed.EUNAVAILABLE {
		t.Fatalf("a last answer %v old: %v; want unavailable", tokenLastKnown, err)
	}
}
