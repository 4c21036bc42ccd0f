package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
)

// classOf is a route's class for rate limits and load shedding. It follows
// from the method, so a new route (likes) is classed without a new column:
// reads are GETs, everything else a user does is a write. Admin routes,
// probes and the API description have no class and are never limited, so
// an operator can reach a process that is shedding or read-only.
func classOf(rt route) limit.Class {
	switch {
	case rt.access == admin || rt.access == probe || rt.access == anyone:
		return ""
	case rt.method == http.MethodGet || rt.method == http.MethodHead:
		return limit.Read
	}
	return limit.Write
}

// defenceMetrics count what the guard refused.
type defenceMetrics struct {
	rateLimited *prometheus.CounterVec
	shed        *prometheus.CounterVec
	readOnly    prometheus.Counter
}

func newDefenceMetrics(logger *slog.Logger, reg prometheus.Registerer, shed *limit.Shedder) *defenceMetrics {
	m := &defenceMetrics{
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_rate_limited_total", Help: "Requests refused with 429, by route class and scope: the user's or the global token bucket (user, global), or the bound on one user's requests in flight (inflight).",
		}, []string{"class", "scope"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_shed_total", Help: "Requests shed with 503 because too many of their class were in flight.",
		}, []string{"class"}),
		readOnly: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_read_only_refusals_total", Help: "Writes refused with 503 while degradation switch L3 (read-only) was on.",
		}),
	}
	if reg != nil {
		m.rateLimited = registerOrExisting(logger, reg, m.rateLimited)
		m.shed = registerOrExisting(logger, reg, m.shed)
		m.readOnly = registerOrExisting(logger, reg, m.readOnly)
		if shed != nil {
			for _, c := range []limit.Class{limit.Read, limit.Write} {
				registerOrExisting(logger, reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
					Name: "feedd_inflight_requests", Help: "Requests of a class holding an in-flight slot.",
					ConstLabels: prometheus.Labels{"class": string(c)},
				}, func() float64 { return float64(shed.InFlight(c)) }))
			}
		}
	}
	return m
}

// registerOrExisting registers c, or returns the collector a second server
// on the same registry registered first.
func registerOrExisting[C prometheus.Collector](logger *slog.Logger, reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		logger.Warn("httpapi: metric not registered", "error", err)
	}
	return c
}

// guard runs the defences of a route in front of its handler, after
// authentication (the per-user bounds need the user): read-only mode for
// writes, the bound on the user's requests in flight, the token buckets,
// then the body, read in full, and only then the in-flight bound of the
// class, held while the answer is made and given back before it is written
// (heldWriter). Each refusal is cheap and says when to come back. Routes
// without a class (admin, probes) only have their body read first and
// their answer written within the deadline.
func guard(cfg Config, m *defenceMetrics, class limit.Class, next http.Handler) http.Handler {
	if class == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if readBodyFirst(w, r) {
				serveHeld(w, r, next, cfg.WriteTimeout, nil, nil)
			}
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if class == limit.Write && cfg.Switches.On(degrade.L3) {
			m.readOnly.Inc()
			retryAfter(w, 30*time.Second)
			writeError(w, http.StatusServiceUnavailable, feed.EUNAVAILABLE, "feedd is read-only for now (degradation switch L3): writes are refused; retry later")
			return
		}
		var user int64
		if p, ok := r.Context().Value(principalKey{}).(principal); ok {
			user = p.user
		}
		// Held until the answer is written, body read included: a user's
		// slow requests (and unread answers) count against that user's
		// own bound.
		releaseUser, ok := cfg.UserSlots.Acquire(user)
		if !ok {
			m.rateLimited.WithLabelValues(string(class), "inflight").Inc()
			retryAfter(w, time.Second)
			writeError(w, http.StatusTooManyRequests, feed.ERATELIMIT, "too many of your requests are in flight at once; wait for some to finish")
			return
		}
		defer releaseUser()
		if v := cfg.Rates.Allow(class, user); !v.OK {
			m.rateLimited.WithLabelValues(string(class), v.Scope).Inc()
			retryAfter(w, v.RetryAfter)
			msg := "too many " + string(class) + "s from you; slow down"
			if v.Scope == "global" {
				msg = "too many " + string(class) + "s right now; retry shortly"
			}
			writeError(w, http.StatusTooManyRequests, feed.ERATELIMIT, msg)
			return
		}
		if !readBodyFirst(w, r) {
			return
		}
		release, ok := cfg.Shed.Acquire(r.Context(), class)
		if !ok {
			m.shed.WithLabelValues(string(class)).Inc()
			retryAfter(w, time.Second)
			writeError(w, http.StatusServiceUnavailable, feed.EUNAVAILABLE, "feedd is overloaded; retry shortly")
			return
		}
		// A flush (an export's) gives the slot back while it writes and
		// takes one again for what the route reads next.
		take := func() (func(), bool) {
			release, ok := cfg.Shed.Acquire(r.Context(), class)
			if !ok {
				m.shed.WithLabelValues(string(class)).Inc()
			}
			return release, ok
		}
		h := next
		if cfg.Freshness != nil && user != 0 {
			h = fresh(cfg.Freshness, user, next)
		}
		serveHeld(w, r, h, cfg.WriteTimeout, release, take)
	})
}

// fresh runs next, a route answering into a heldWriter, for user: a read
// with the context that makes it see the user's last write, and a write
// that succeeded marked as the user's last before its answer goes out, so
// that the user's next request, to any process, sees it.
func fresh(f Freshness, user int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r.WithContext(f.Reading(r.Context(), user)))
			return
		}
		next.ServeHTTP(w, r)
		// Nothing written is net/http's 200.
		if hw, ok := w.(*heldWriter); ok && (hw.status == 0 || hw.status >= 200 && hw.status < 300) {
			// The write committed even if the client went away.
			f.Wrote(context.WithoutCancel(r.Context()), user)
		}
	})
}

// guardStream is guard for the live stream: a stream lasts hours, and
// would hold a user's in-flight slot and a slot of its class all along,
// so it takes neither (the hub bounds streams per user and per process).
// Opening one still spends a read of the user's token bucket, so a client
// reconnecting in a loop is slowed down like any other reader.
func guardStream(cfg Config, m *defenceMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The check is a call of its own: this frame stays on the idle
		// stream's stack for hours (stream.Handler says why it must be
		// small).
		if streamRefused(cfg.Rates, m, w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// streamRefused answers 429 and reports true when the caller's token
// bucket has no read left for opening a stream.
//
//go:noinline
func streamRefused(rates *limit.Rates, m *defenceMetrics, w http.ResponseWriter, r *http.Request) bool {
	var user int64
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		user = p.user
	}
	v := rates.Allow(limit.Read, user)
	if v.OK {
		return false
	}
	m.rateLimited.WithLabelValues(string(limit.Read), v.Scope).Inc()
	retryAfter(w, v.RetryAfter)
	writeError(w, http.StatusTooManyRequests, feed.ERATELIMIT, "too many stream connections from you; slow down")
	return true
}

// readBodyFirst reads the whole body (bounded in size and time by the
// middleware) before the route takes a slot of the Shedder, so that a
// client sending its headers and then trickling its body holds no slot
// that other users need, only its own goroutine and one of its own
// UserSlots, until the body deadline answers it 408. Reading first rather
// than under the slot costs one copy of a small body: every route reads
// its whole body anyway. It answers the request itself, and returns
// false, when the body is late, too large or cut short.
func readBodyFirst(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	body, err := readBody(r)
	if err != nil {
		respondError(w, err)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// retryAfter sets Retry-After in whole seconds, rounded up: "0" would
// invite an immediate retry into the same wall.
func retryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))))
}

// Request ids: an incoming X-Request-Id is honoured when it is a sane
// token (so a caller's id follows the request through our logs), else one
// is generated.
const (
	headerRequestID = "X-Request-Id"
	maxRequestID    = 128
)

func requestID(r *http.Request) string {
	if id := r.Header.Get(headerRequestID); validRequestID(id) {
		return id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validRequestID accepts printable ASCII without spaces or quotes, so an id
// can never forge a log field or a header.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

type degradationJSON struct {
	Switches map[degrade.Switch]bool   `json:"switches"`
	Meaning  map[degrade.Switch]string `json:"meaning"`
	Level    int                       `json:"level"`
	// Shared is set on a PUT: whether the change reached the shared
	// store (and so every process), or holds in this process only.
	Shared *bool `json:"shared,omitempty"`
}

func degradationBody(sw *degrade.Switches) degradationJSON {
	return degradationJSON{Switches: sw.Snapshot(), Meaning: degrade.Meaning, Level: sw.Level()}
}

func handleDegradationGet(sw *degrade.Switches) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw == nil {
			writeError(w, http.StatusNotFound, feed.ENOTFOUND, "this process has no degradation switches")
			return
		}
		encode(w, http.StatusOK, degradationBody(sw))
	})
}

// setSwitchesRequest is a partial map: only the switches named change.
type setSwitchesRequest map[degrade.Switch]bool

func (req setSwitchesRequest) valid() error {
	if len(req) == 0 {
		return feed.Errorf(feed.EINVALID, `name at least one switch, e.g. {"L3": true}`)
	}
	for sw := range req {
		if !degrade.Valid(sw) {
			return feed.Errorf(feed.EINVALID, "unknown switch %q: the switches are L1, L2, L3 and L4", sw)
		}
	}
	return nil
}

func handleDegradationPut(sw *degrade.Switches) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw == nil {
			writeError(w, http.StatusNotFound, feed.ENOTFOUND, "this process has no degradation switches")
			return
		}
		req, err := decode[setSwitchesRequest](r)
		if err != nil {
			respondError(w, err)
			return
		}
		shared, err := sw.Set(r.Context(), req)
		if err != nil {
			respondError(w, fmt.Errorf("httpapi: set switches: %w", err))
			return
		}
		body := degradationBody(sw)
		body.Shared = &shared
		encode(w, http.StatusOK, body)
	})
}

// readyJSON is /readyz's body: each dependency's state, and on failure the
// standard error naming the ones that failed.
type readyJSON struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
	Error  *errorDetailJSON  `json:"error,omitempty"`
}

func handleReady(ready func(context.Context) []feed.Check) http.Handler {
	rd := newReadiness(ready, time.Now)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readyJSON{Status: "ok", Checks: map[string]string{}}
		var failed []string
		var errs []error
		for _, c := range rd.checks(r.Context()) {
			switch {
			case c.Err == nil:
				body.Checks[c.Name] = "ok"
			case c.Required:
				body.Checks[c.Name] = "down"
				failed = append(failed, c.Name)
				errs = append(errs, fmt.Errorf("%s: %w", c.Name, c.Err))
			default:
				// Reported, not fatal: the process serves without it.
				body.Checks[c.Name] = "degraded"
				errs = append(errs, fmt.Errorf("%s: %w", c.Name, c.Err))
			}
		}
		if len(errs) > 0 {
			// The detail names hosts and ports: the log gets it, the probe
			// gets the dependency names.
			noteError(w, errors.Join(errs...))
		}
		if len(failed) > 0 {
			body.Status = "unavailable"
			body.Error = &errorDetailJSON{Code: feed.EUNAVAILABLE, Message: "not ready: " + strings.Join(failed, ", ") + " does not answer"}
			encode(w, http.StatusServiceUnavailable, body)
			return
		}
		encode(w, http.StatusOK, body)
	})
}
