package httpapi

import (
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestEncode: a value is written with its status and a newline; one that
// cannot be encoded becomes a clean 500 with the standard error body.
func TestEncode(t *testing.T) {
	w := httptest.NewRecorder()
	encode(w, http.StatusCreated, map[string]any{"a": "<b>", "n": 1})
	if got, want := w.Body.String(), `{"a":"\u003cb\u003e","n":1}`+"\n"; w.Code != http.StatusCreated || got != want {
		t.Errorf("encode = %d %q; want 201 %q", w.Code, got, want)
	}
	if got := w.Header().Get("Content-Type"); got != contentTypeJSON {
		t.Errorf("Content-Type = %q; want %q", got, contentTypeJSON)
	}
	w = httptest.NewRecorder()
	encode(w, http.StatusOK, map[string]any{"bad": math.NaN()})
	if got, want := w.Body.String(), `{"error":{"code":"internal","message":"internal error"}}`+"\n"; w.Code != http.StatusInternalServerError || got != want {
		t.Errorf("encode(NaN) = %d %q; want 500 %q", w.Code, got, want)
	}
}
