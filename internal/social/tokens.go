package social

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// TokenStore is what tokens.go needs of SQL.
type TokenStore interface {
	TokenGeneration(ctx context.Context, user int64) (int64, error)
	RevokeTokens(ctx context.Context, user int64) error
}

// Token standing: whether a user's tokens are accepted, and which token
// generation they must carry. SQL holds the truth (users.token_generation,
// bumped by a revocation); every check reads it through two caches, so
// that a busy user's every request does not reach SQL:
//
//   - each process's own copy, trusted for TokenCheckTTL: a change reaches
//     every process within it;
//   - the shared cache (Redis; the in-process cache on the embedded
//     default), which every change overwrites at once (tokensChanged) and
//     a miss fills only if the entry is still absent (SetNX), so that a
//     reader that read SQL before a change cannot put the old answer back.
//
// A lost or failing cache falls back to SQL. While SQL is unavailable too,
// a process trusts its last answer up to tokenLastKnown old rather than
// refuse every user with a 503: a revocation is an SQL write, so none can
// have been made since SQL stopped answering; a user it knows nothing of
// gets a 503.
const (
	// TokenCheckTTL is how long a process trusts its copy of a user's
	// token standing: a user created or revoked is seen by every process
	// within it.
	TokenCheckTTL = time.Second
	// tokenSharedTTL is how long the shared cache keeps a user's standing.
	// Every change overwrites it, so its length only bounds the SQL reads
	// of an active user (one per tokenSharedTTL, whatever the process
	// count) and how long a change whose cache write failed can go unseen
	// by processes that read the cache.
	tokenSharedTTL = 10 * time.Minute
	// tokenLastKnown is how long a process may fall back on its last
	// answer while SQL is unavailable.
	tokenLastKnown = 10 * time.Minute
	// tokenStandings bounds the users a process remembers (about 100 bytes
	// each).
	tokenStandings = 100_000
)

// tokenStanding is one user's answer.
type tokenStanding struct {
	exists bool
	gen    int64
	// read is when the answer was read from SQL or the shared cache, or
	// just before: its freshness is counted from the read's start, so an
	// answer read before a change is never trusted past TokenCheckTTL
	// after the change.
	read time.Time
}

func (st tokenStanding) answer(user int64) (int64, error) {
	if !st.exists {
		return 0, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	return st.gen, nil
}

// The shared cache's value: the generation in decimal, or "none".
const noUser = "none"

func (st tokenStanding) encode() string {
	if !st.exists {
		return noUser
	}
	return strconv.FormatInt(st.gen, 10)
}

func decodeStanding(v string) (tokenStanding, bool) {
	if v == noUser {
		return tokenStanding{}, true
	}
	gen, err := strconv.ParseInt(v, 10, 64)
	return tokenStanding{exists: true, gen: gen}, err == nil && gen >= 0
}

func standingKey(user int64) string { return "tokgen:" + strconv.FormatInt(user, 10) }

// TokenGeneration returns the generation a token of user must carry to be
// accepted, or ENOTFOUND when user does not exist. The answer may be up to
// TokenCheckTTL old; while SQL is unavailable, up to tokenLastKnown old,
// and EUNAVAILABLE when the process knows nothing of user.
func (s *Service) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	last, known := s.standings.Get(user)
	if known && s.now().Sub(last.read) < TokenCheckTTL {
		s.tokenChecks.WithLabelValues("memory").Inc()
		return last.answer(user)
	}
	v, err, _ := s.standingLoads.Do(strconv.FormatInt(user, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		return s.loadStanding(ctx, user)
	})
	if err != nil {
		if known && sqlbreaker.IsUnavailable(err) {
			s.tokenChecks.WithLabelValues("last_known").Inc()
			return last.answer(user)
		}
		return 0, err
	}
	return v.(tokenStanding).answer(user)
}

// loadStanding reads user's standing from the shared cache, else from SQL
// (filling the cache), and keeps it in the process.
func (s *Service) loadStanding(ctx context.Context, user int64) (tokenStanding, error) {
	start := s.now()
	v, ok, cacheErr := s.kv.Get(ctx, standingKey(user))
	if cacheErr != nil {
		s.cacheFailed("token standing", cacheErr)
	}
	if st, valid := decodeStanding(v); ok && valid {
		st.read = start
		s.standings.Put(user, st)
		s.tokenChecks.WithLabelValues("cache").Inc()
		return st, nil
	}
	st, err := s.readStanding(ctx, user)
	if err != nil {
		return tokenStanding{}, err
	}
	s.tokenChecks.WithLabelValues("sql").Inc()
	if cacheErr == nil {
		// Only if still absent: a change since our read has written the
		// newer answer, which must not be overwritten.
		if _, err := s.kv.SetNX(ctx, standingKey(user), st.encode(), tokenSharedTTL); err != nil {
			s.cacheFailed("token standing", err)
		}
	}
	return st, nil
}

// readStanding reads user's standing from SQL and keeps it in the process.
func (s *Service) readStanding(ctx context.Context, user int64) (tokenStanding, error) {
	start := s.now()
	gen, err := s.store.TokenGeneration(ctx, user)
	if err != nil && feed.ErrorCode(err) != feed.ENOTFOUND {
		return tokenStanding{}, err
	}
	st := tokenStanding{exists: err == nil, gen: gen, read: start}
	s.standings.Put(user, st)
	return st, nil
}

// CurrentTokenGeneration is TokenGeneration read from SQL, for a token
// about to be minted (which must carry the generation of after any
// revocation, whatever the caches say), or for a token newer than what
// the process knows. The answer replaces the process's copy and fills the
// shared cache if it has no entry, so that a token's first uses after it
// is minted cost SQL nothing more.
func (s *Service) CurrentTokenGeneration(ctx context.Context, user int64) (int64, error) {
	st, err := s.readStanding(ctx, user)
	if err != nil {
		return 0, err
	}
	s.tokenChecks.WithLabelValues("sql").Inc()
	if _, err := s.kv.SetNX(ctx, standingKey(user), st.encode(), tokenSharedTTL); err != nil {
		s.cacheFailed("token standing", err)
	}
	return st.answer(user)
}

// RevokeTokens refuses, on every process within TokenCheckTTL of its
// return, every token of user minted before the call; tokens minted after
// it work. ENOTFOUND for an unknown user. EUNAVAILABLE when the
// revocation is stored but the shared cache could not be told: the call
// may be repeated (a second revocation refuses nothing more than tokens
// minted between the two).
func (s *Service) RevokeTokens(ctx context.Context, user int64) error {
	if err := s.store.RevokeTokens(ctx, user); err != nil {
		return err
	}
	if err := s.tokensChanged(ctx, user); err != nil {
		return fmt.Errorf("%w: %w", feed.Errorf(feed.EUNAVAILABLE,
			"the revocation is stored, but not every process could be told at once; repeat the call"), err)
	}
	s.tokensEnded(ctx, "tokens revoked", user)
	return nil
}

// tokensChanged is the one call to make after anything that changes
// whether user's tokens are accepted is committed to SQL (the user created,
// revoked or deleted): it writes the truth to the shared cache over any
// older answer, and to this process's copy, so that every process acts on
// it within TokenCheckTTL. An error means the shared cache was not told:
// processes reading it may keep the old answer until it expires.
//
// It reads SQL again after writing, and writes again if the truth moved
// meanwhile: of two changes racing, the one that commits last then also
// writes last, so the shared cache never keeps the older answer.
func (s *Service) tokensChanged(ctx context.Context, user int64) error {
	written := ""
	for range 3 {
		st, err := s.readStanding(ctx, user)
		if err != nil {
			return err
		}
		v := st.encode()
		if v == written {
			return nil
		}
		if err := s.kv.Set(ctx, standingKey(user), v, tokenSharedTTL); err != nil {
			return fmt.Errorf("social: publish token standing of %d: %w", user, err)
		}
		written = v
	}
	return nil
}
