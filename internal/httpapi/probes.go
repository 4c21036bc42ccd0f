package httpapi

import (
	"context"
	_ "embed"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/feedd/feedd/internal/feed"
)

// openAPIDoc is written by hand, next to routes.go; TestOpenAPIMatchesRoutes
// keeps the two in step.
//
//go:embed openapi.json
var openAPIDoc []byte

func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentTypeJSON)
		_, _ = w.Write(openAPIDoc)
	})
}

type statusJSON struct {
	Status string `json:"status"`
}

// handleHealth answers while the process can serve at all: a liveness probe
// must not fail because a backend did, or every replica restarts at once.
func handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, statusJSON{Status: "ok"})
	})
}

func handleMetrics(metrics http.Handler) http.Handler {
	if metrics != nil {
		return metrics
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, feed.ENOTFOUND, "this process serves no metrics")
	})
}

// readiness answers /readyz from the last ping of the backends while it is
// younger than every, and lets one caller at a time ping, the others
// waiting for its answer: however often the probe is called (a balancer's
// health checks, a scraper, someone with curl in a loop), the backends see
// at most one ping per interval from this process, and never two at once.
type readiness struct {
	ping  func(context.Context) []feed.Check
	every time.Duration
	now   func() time.Time

	flight singleflight.Group
	mu     sync.Mutex
	last   []feed.Check // read-only once stored; guarded by mu
	at     time.Time    // when last's ping started; zero: none yet; guarded by mu
}

// readyEvery is how long a ping's answer stands; readyTimeout bounds a
// ping, for a service without per-probe timeouts (feed.RunProbes has them).
const (
	readyEvery   = time.Second
	readyTimeout = 5 * time.Second
)

func newReadiness(ping func(context.Context) []feed.Check, now func() time.Time) *readiness {
	return &readiness{ping: ping, every: readyEvery, now: now}
}

func (rd *readiness) fresh() ([]feed.Check, bool) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.at.IsZero() || rd.now().Sub(rd.at) >= rd.every {
		return nil, false
	}
	return rd.last, true
}

func (rd *readiness) checks(ctx context.Context) []feed.Check {
	if c, ok := rd.fresh(); ok {
		return c
	}
	v, _, _ := rd.flight.Do("ping", func() (any, error) {
		// A ping that ended between fresh above and here answers.
		if c, ok := rd.fresh(); ok {
			return c, nil
		}
		started := rd.now()
		// The ping answers every caller waiting on it: one of them
		// hanging up must not fail it for the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
		defer cancel()
		c := rd.ping(ctx)
		rd.mu.Lock()
		rd.last, rd.at = c, started
		rd.mu.Unlock()
		return c, nil
	})
	return v.([]feed.Check)
}
