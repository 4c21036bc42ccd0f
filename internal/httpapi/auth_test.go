package httpapi

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/feedd/feedd/internal/feed"
)

// TestRememberedTokens: a token verified once is remembered, but only what
// cannot change is: as the clock moves, a remembered token expires exactly
// when the parser would say so, one not valid yet becomes valid at its nbf,
// and a token that differs in one byte is verified on its own.
func TestRememberedTokens(t *testing.T) {
	var (
		mu  sync.Mutex
		now = testNow
	)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	set := func(at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		now = at
	}
	tk := newTokens(Config{JWTSecret: []byte(testSecret), Now: clock})
	auth := func(token string) (int64, error) {
		t.Helper()
		r := httptest.NewRequest("GET", "/v1/me/feed", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		p, err := tk.authenticate(r)
		return p.user, err
	}
	exp := testNow.Add(time.Hour).Truncate(time.Second)
	token := signToken(t, jwt.SigningMethodHS256, []byte(testSecret), jwt.MapClaims{"sub": "2", "exp": exp.Unix()})
	for i := range 2 {
		if u, err := auth(token); err != nil || u != bob {
			t.Fatalf("use %d: user %d, %v; want bob", i, u, err)
		}
	}
	if tk.verified.Len() != 1 {
		t.Fatalf("%d tokens remembered; want 1", tk.verified.Len())
	}
	tampered := token[:len(token)-2] + "xx"
	if tampered == token {
		tampered = token[:len(token)-2] + "yy"
	}
	if _, err := auth(tampered); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Errorf("a token one byte off the remembered one: %v; want unauthorized", err)
	}
	set(exp.Add(-time.Nanosecond))
	if _, err := auth(token); err != nil {
		t.Errorf("a nanosecond before exp: %v; want valid", err)
	}
	set(exp)
	if _, err := auth(token); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("at exp: %v; want expired", err)
	}

	nbf := testNow.Add(time.Minute).Truncate(time.Second)
	early := signToken(t, jwt.SigningMethodHS256, []byte(testSecret), jwt.MapClaims{"sub": "3", "nbf": nbf.Unix(), "exp": exp.Unix()})
	set(nbf.Add(-time.Nanosecond))
	if _, err := auth(early); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Errorf("before nbf: %v; want unauthorized", err)
	}
	set(nbf)
	if u, err := auth(early); err != nil || u != carol {
		t.Fatalf("at nbf: user %d, %v; want carol", u, err)
	}
	// Remembered now; a clock set back before nbf must not let it through.
	set(nbf.Add(-time.Second))
	if _, err := auth(early); feed.ErrorCode(err) != feed.EUNAUTHORIZED {
		t.Errorf("remembered, clock before nbf: %v; want unauthorized", err)
	}
}
