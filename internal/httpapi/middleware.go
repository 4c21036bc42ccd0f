package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
)

// middleware wraps the mux, outermost first: bound the body in size and
// time, log and measure, recover panics (inside, so that the log and the
// histogram see the 500), answer unknown routes and methods in JSON.
//
// Only observe copies the request, once, to put the request id in its
// context, before the mux: the mux records the matched pattern in
// r.Pattern, and observe reads it from that same copy once the mux returns.
func middleware(logger *slog.Logger, m *requestMetrics, maxBody int64, bodyTimeout time.Duration, mux splitMux) http.Handler {
	h := routeFallback(mux)
	h = recoverPanics(h)
	return observe(logger, m, maxBody, bodyTimeout, h)
}

// statusWriter remembers what a handler answered, and the error behind an
// error response, for the request log.
type statusWriter struct {
	http.ResponseWriter
	// status is the handler's answer: sent, or held in memory until the
	// route's slot is given back (heldWriter notes it here at once, for
	// announcing).
	status int
	sent   bool // the status went out
	err    error
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.sent && status >= 200 {
		w.status, w.sent = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.sent {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.sent = true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// findStatusWriter looks for the statusWriter under w.
func findStatusWriter(w http.ResponseWriter) *statusWriter {
	for {
		switch x := w.(type) {
		case *statusWriter:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// noteError hands err to the request log. Handlers report errors here
// instead of logging them, so each request is one log line with its detail.
func noteError(w http.ResponseWriter, err error) {
	if sw := findStatusWriter(w); sw != nil {
		sw.err = err
	}
}

func observe(logger *slog.Logger, m *requestMetrics, maxBody int64, bodyTimeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if r.ContentLength != 0 { // -1: chunked, of unknown length
			// The headers are in; the body gets bodyTimeout. A deadline on
			// this one request (http.Server.ReadTimeout would count from
			// the start of the headers, for every request alike) bounds
			// every read of it: the guard's, a handler's, and the one
			// net/http makes to discard a body left unread. net/http
			// itself lifts it once the body has been read to its end.
			// Writers that are not a connection (tests' recorders)
			// cannot take one.
			_ = http.NewResponseController(w).SetReadDeadline(start.Add(bodyTimeout))
		}
		// Given the server's own writer, MaxBytesReader can also tell the
		// server to close a connection whose body was cut short.
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		reqID := requestID(r)
		w.Header().Set(headerRequestID, reqID)
		r = r.WithContext(feed.WithRequestID(r.Context(), reqID))
		sw := &statusWriter{ResponseWriter: w}
		// A handler that cuts its response off mid-way (an export whose
		// read failed) panics with http.ErrAbortHandler; the request is
		// still logged, with its error, on the way out.
		finished := false
		defer func() {
			if !finished {
				logRequest(logger, m, r, sw, reqID, start, true)
			}
		}()
		next.ServeHTTP(sw, r)
		finished = true
		logRequest(logger, m, r, sw, reqID, start, false)
	})
}

// logRequest observes a request's latency and writes its log line;
// aborted says its response was cut off.
func logRequest(logger *slog.Logger, m *requestMetrics, r *http.Request, sw *statusWriter, reqID string, start time.Time, aborted bool) {
	elapsed := time.Since(start)
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	route := routeLabel(r.Pattern)
	method := methodLabel(r.Method)
	m.observe(route, method, status, elapsed)

	level := slog.LevelDebug
	switch {
	case status >= 500:
		level = slog.LevelError
	case status >= 400:
		level = slog.LevelInfo
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Duration("duration", elapsed),
		slog.String("request_id", reqID),
	}
	if sw.err != nil {
		attrs = append(attrs, slog.String("error", sw.err.Error()))
	}
	if aborted {
		level = slog.LevelError
		attrs = append(attrs, slog.Bool("aborted", true))
	}
	logger.LogAttrs(r.Context(), level, "http request", attrs...)
}

// routeLabel is the path part of the matched pattern, so labels are bounded
// by the route table however many paths clients try.
func routeLabel(pattern string) string {
	if pattern == "" {
		return "unmatched"
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// methodLabel bounds the method label: a client can send any token.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // the server's own way to drop a connection
			}
			err := fmt.Errorf("httpapi: panic: %v\n%s", v, debug.Stack())
			if sw := findStatusWriter(w); sw != nil && sw.sent {
				// Too late for an error body; the client sees a short one.
				sw.err = err
				return
			}
			respondError(w, err)
		}()
		next.ServeHTTP(w, r)
	})
}

// routeFallback answers for the mux when no route matches, in JSON: 404,
// or 405 with the Allow header when the path exists under other methods.
func routeFallback(mux splitMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux answers a path that is not clean ("/v1/users//posts",
		// an empty id) with an HTML redirect to the cleaned one, which may
		// be another route; an API client gets a JSON 404 instead (found
		// by FuzzPathAndQuery).
		if p := r.URL.Path; p != "" && p != "/" && path.Clean(p) != p && r.Method != http.MethodConnect {
			writeError(w, http.StatusNotFound, feed.ENOTFOUND, fmt.Sprintf("there is no route %s %s", r.Method, p))
			return
		}
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// The mux knows which methods the path allows; let its handler
		// answer into a probe and keep only the status and Allow header.
		probe := &headerProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			allow := probe.header.Get("Allow")
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed,
				fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
			return
		}
		writeError(w, http.StatusNotFound, feed.ENOTFOUND, fmt.Sprintf("there is no route %s %s", r.Method, r.URL.Path))
	})
}

// headerProbe is a ResponseWriter that keeps the header and status and
// drops the body.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(status int)      { p.status = status }

// requestMetrics is the latency histogram; a nil *requestMetrics records
// nothing, for NewProbes and for callers that pass no registry.
type requestMetrics struct {
	duration *prometheus.HistogramVec
}

func newRequestMetrics(logger *slog.Logger, reg prometheus.Registerer) *requestMetrics {
	if reg == nil {
		return nil
	}
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "feedd_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by route pattern, method and status code.",
		Buckets: requestBuckets,
	}, []string{"route", "method", "code"})
	if err := reg.Register(h); err != nil {
		// A second server on the same registry (tests, or `feedd all`
		// building two) shares the first one's histogram.
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.HistogramVec); ok {
				return &requestMetrics{duration: existing}
			}
		}
		logger.Warn("httpapi: request histogram not registered", "error", err)
	}
	return &requestMetrics{duration: h}
}

// requestBuckets are Prometheus's default buckets with three more below
// 5 ms, where most of feedd's answers fall: without them the ops console's
// percentiles (read from this histogram) could say no more of a fast
// answer than "under 5 ms".
var requestBuckets = append([]float64{0.0005, 0.001, 0.0025}, prometheus.DefBuckets...)

func (m *requestMetrics) observe(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(route, method, strconv.Itoa(status)).Observe(d.Seconds())
}
