package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHeldWriterFlush: a route that flushes (an export) gives its slot
// back before each flush's write and takes one again after it; when none
// is free, its later writes fail (the rest of the answer is shed) and
// nothing more goes out. A route that does not flush sends its answer,
// with its length, once it has returned and its slot is given back.
func TestHeldWriterFlush(t *testing.T) {
	type slots struct{ held, released, taken int }
	run := func(free bool, h http.HandlerFunc) (*httptest.ResponseRecorder, *slots) {
		s := &slots{held: 1}
		rec := httptest.NewRecorder()
		release := func() { s.held--; s.released++ }
		take := func() (func(), bool) {
			if !free {
				return nil, false
			}
			s.held++
			s.taken++
			return release, true
		}
		serveHeld(rec, httptest.NewRequest("GET", "/", nil), h, time.Second, release, take)
		return rec, s
	}

	rec, s := run(true, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "held")
		if rec := w.(interface{ Unwrap() http.ResponseWriter }).Unwrap().(*httptest.ResponseRecorder); rec.Body.Len() != 0 || rec.Code != http.StatusOK || rec.Flushed {
			t.Errorf("the answer went out before the route returned: %d %q", rec.Code, rec.Body)
		}
	})
	if rec.Code != http.StatusAccepted || rec.Body.String() != "held" || rec.Header().Get("Content-Length") != "4" || s.held != 0 {
		t.Errorf("no flush: %d %q (Content-Length %q), %d slots held; want 202 \"held\", length 4, none held", rec.Code, rec.Body, rec.Header().Get("Content-Length"), s.held)
	}

	rec, s = run(true, func(w http.ResponseWriter, r *http.Request) {
		for _, page := range []string{"one\n", "two\n"} {
			_, _ = io.WriteString(w, page)
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush: %v", err)
			}
		}
	})
	if rec.Body.String() != "one\ntwo\n" || rec.Header().Get("Content-Length") != "" || s.held != 0 || s.released != 3 || s.taken != 2 {
		t.Errorf("two flushes: %q (Content-Length %q), slots %+v; want both pages, no length, 3 released, 2 taken, none held", rec.Body, rec.Header().Get("Content-Length"), *s)
	}

	rec, s = run(false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "one\n")
		if err := http.NewResponseController(w).Flush(); !errors.Is(err, errSlotLost) {
			t.Errorf("flush with no slot free after it: %v; want errSlotLost", err)
		}
		if _, err := io.WriteString(w, "two\n"); !errors.Is(err, errSlotLost) {
			t.Errorf("write after the slot was lost: %v; want errSlotLost", err)
		}
	})
	if rec.Body.String() != "one\n" || s.held != 0 || s.released != 1 {
		t.Errorf("slot lost: %q, slots %+v; want the first page only, none held", rec.Body, *s)
	}
}
