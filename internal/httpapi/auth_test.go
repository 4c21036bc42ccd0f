package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/feedd/feedd/internal/feed"
)

// anyUser says every user exists, at token generation 0.
type anyUser struct{}

func (anyUser) TokenGeneration(context.Context, int64) (int64, error)        { return 0, nil }
func (anyUser) CurrentTokenGeneration(context.Context, int64) (int64, error) { return 0, nil }

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
	tk := newTokens(Config{JWTSecret: []byte(testSecret), Now: clock}, anyUser{})
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

// TestTokenOfUnknownUser: a correctly signed token whose user does not
// exist acts as nobody: publish, like and feed answer 401 without calling
// the service, and say why.
func TestTokenOfUnknownUser(t *testing.T) {
	e := newEnv(t)
	p := e.svc.seedPost(alice, "hello")
	ghost := userToken(t, 999)
	for _, r := range []req{
		{method: "POST", path: "/v1/posts", token: ghost, body: `{"content":"boo"}`},
		{method: "PUT", path: "/v1/posts/" + feed.FormatID(p.ID) + "/like", token: ghost},
		{method: "GET", path: "/v1/me/feed", token: ghost},
	} {
		res := e.do(r)
		wantStatus(t, res, http.StatusUnauthorized)
		if msg := res.errorMessage(t); !strings.Contains(msg, "does not exist") {
			t.Errorf("%s %s: message %q; want it to say the user does not exist", r.method, r.path, msg)
		}
	}
	wantCalls(t, e.svc)

	// Created now, the same token works.
	wantStatus(t, e.do(req{method: "POST", path: "/v1/users", token: testAdmin, body: `{"name":"late","id":"999"}`}), http.StatusCreated)
	wantStatus(t, e.do(req{method: "GET", path: "/v1/me/feed", token: ghost}), http.StatusOK)
}

// TestRevokeTokens: DELETE /v1/users/{id}/tokens refuses the user's
// tokens minted before it, tokens minted after it (in the same second:
// the clock is pinned) work, other users' tokens are untouched, and an
// unknown user is 404.
func TestRevokeTokens(t *testing.T) {
	e := newEnv(t)
	mint := func(user int64) string {
		t.Helper()
		r := e.do(req{method: "POST", path: "/v1/users/" + feed.FormatID(user) + "/tokens", token: testAdmin})
		wantStatus(t, r, http.StatusCreated)
		return r.json(t)["token"].(string)
	}
	feedOf := func(token string) response {
		t.Helper()
		return e.do(req{method: "GET", path: "/v1/me/feed", token: token})
	}
	minted, handMade, alices := mint(bob), userToken(t, bob), mint(alice)
	for _, tok := range []string{minted, handMade, alices} {
		wantStatus(t, feedOf(tok), http.StatusOK)
	}
	e.svc.calls()

	r := e.do(req{method: "DELETE", path: "/v1/users/2/tokens", token: testAdmin})
	wantStatus(t, r, http.StatusNoContent)
	if len(r.body) != 0 {
		t.Errorf("body = %q; want none", r.body)
	}
	wantCalls(t, e.svc, "RevokeTokens[2]")
	for name, tok := range map[string]string{"minted": minted, "without a generation": handMade} {
		r := feedOf(tok)
		wantStatus(t, r, http.StatusUnauthorized)
		if msg := r.errorMessage(t); !strings.Contains(msg, "revoked") {
			t.Errorf("a %s token after the revocation: message %q; want it to say revoked", name, msg)
		}
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("no WWW-Authenticate header on a 401")
		}
	}
	wantStatus(t, feedOf(alices), http.StatusOK)

	fresh := mint(bob)
	wantStatus(t, feedOf(fresh), http.StatusOK)
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(fresh, claims); err != nil {
		t.Fatal(err)
	}
	if got := claims["gen"]; got != float64(1) {
		t.Errorf("gen claim of a token minted after one revocation = %v; want 1", got)
	}

	// Again: the token minted between the two calls goes too.
	wantStatus(t, e.do(req{method: "DELETE", path: "/v1/users/2/tokens", token: testAdmin}), http.StatusNoContent)
	wantStatus(t, feedOf(fresh), http.StatusUnauthorized)
	wantStatus(t, feedOf(mint(bob)), http.StatusOK)

	r = e.do(req{method: "DELETE", path: "/v1/users/999/tokens", token: testAdmin})
	wantStatus(t, r, http.StatusNotFound)
	if got, want := r.errorCode(t), "not_found"; got != want {
		t.Errorf("code = %q; want %q", got, want)
	}
	wantStatus(t, e.do(req{method: "DELETE", path: "/v1/users/042x/tokens", token: testAdmin}), http.StatusBadRequest)
}

// TestTokenStandingUnavailable: when the service cannot tell whether a
// token's user stands, the answer is 503 (retry), not 401 (a client
// would drop a good token), and no WWW-Authenticate.
func TestTokenStandingUnavailable(t *testing.T) {
	e := newEnv(t)
	e.svc.setFail("TokenGeneration", feed.Errorf(feed.EUNAVAILABLE, "the database is not answering; retry shortly"))
	r := e.do(req{method: "GET", path: "/v1/me/feed", token: userToken(t, bob)})
	wantStatus(t, r, http.StatusServiceUnavailable)
	if got := r.header.Get("WWW-Authenticate"); got != "" {
		t.Errorf("WWW-Authenticate = %q on a 503; want none", got)
	}
	// The admin token needs no user.
	wantStatus(t, e.do(req{method: "GET", path: "/v1/users/2", token: testAdmin}), http.StatusOK)
}

// staleStandings answers TokenGeneration from an old copy (stale) and
// CurrentTokenGeneration from the truth, and counts the truth's reads.
type staleStandings struct {
	stale, truth map[int64]int64 // user -> generation; absent: no user
	reads        int
}

func (s *staleStandings) TokenGeneration(_ context.Context, user int64) (int64, error) {
	return lookupGeneration(s.stale, user)
}

func (s *staleStandings) CurrentTokenGeneration(_ context.Context, user int64) (int64, error) {
	s.reads++
	return lookupGeneration(s.truth, user)
}

func lookupGeneration(m map[int64]int64, user int64) (int64, error) {
	gen, ok := m[user]
	if !ok {
		return 0, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	return gen, nil
}

// TestTokenNewerThanTheCopy: the service's copy of a user's standing may
// be a second old. A token it would refuse but which is newer than the
// copy — of a later generation, or minted in the last seconds for a user
// the copy does not know — is checked against the truth instead, so a
// token minted just after a revocation or a creation works on every
// process at once; an old token is refused from the copy, without a read.
func TestTokenNewerThanTheCopy(t *testing.T) {
	st := &staleStandings{
		stale: map[int64]int64{bob: 0},
		truth: map[int64]int64{bob: 1, carol: 0},
	}
	tk := newTokens(Config{JWTSecret: []byte(testSecret), Now: func() time.Time { return testNow }}, st)
	auth := func(claims jwt.MapClaims) error {
		t.Helper()
		claims["exp"] = testNow.Add(time.Hour).Unix()
		r := httptest.NewRequest("GET", "/v1/me/feed", nil)
		r.Header.Set("Authorization", "Bearer "+signToken(t, jwt.SigningMethodHS256, []byte(testSecret), claims))
		_, err := tk.authenticate(r)
		return err
	}
	for _, tt := range []struct {
		name   string
		claims jwt.MapClaims
		ok     bool
		reads  int
	}{
		{"a later generation", jwt.MapClaims{"sub": "2", "gen": 1}, true, 1},
		{"an earlier generation the copy still takes", jwt.MapClaims{"sub": "2"}, true, 0},
		{"a generation the truth has not reached", jwt.MapClaims{"sub": "2", "gen": 2}, false, 1},
		{"a new user's fresh token", jwt.MapClaims{"sub": "3", "iat": testNow.Unix()}, true, 1},
		{"an unknown user's old token", jwt.MapClaims{"sub": "3", "iat": testNow.Add(-time.Minute).Unix()}, false, 0},
		{"an unknown user's token without iat", jwt.MapClaims{"sub": "3"}, false, 0},
		{"no user at all, fresh token", jwt.MapClaims{"sub": "4", "iat": testNow.Unix()}, false, 1},
	} {
		st.reads = 0
		err := auth(tt.claims)
		if (err == nil) != tt.ok || st.reads != tt.reads {
			t.Errorf("%s: %v after %d reads of the truth; want ok=%v after %d", tt.name, err, st.reads, tt.ok, tt.reads)
		}
	}
}

// TestTokenRefusalsSayWhy: every refused token is a 401 with the code
// unauthorized and a WWW-Authenticate, and its message says what is wrong
// with it, in words of its own: something that is not a JWT is malformed,
// a token altered by a few characters or signed with another secret does
// not verify, and neither is told it expired, was revoked or lost its user.
func TestTokenRefusalsSayWhy(t *testing.T) {
	e := newEnv(t)
	good := userToken(t, bob)
	head, rest, _ := strings.Cut(good, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	// A payload that still decodes, for another user: only the signature
	// can tell.
	otherPayload := strings.Split(userToken(t, carol), ".")[1]
	flip := func(s string, i int) string {
		c := byte('A')
		if s[i] == 'A' {
			c = 'B'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	wantStatus(t, e.do(req{method: "DELETE", path: "/v1/users/3/tokens", token: testAdmin}), http.StatusNoContent)
	claims := func(c jwt.MapClaims) string {
		return signToken(t, jwt.SigningMethodHS256, []byte(testSecret), c)
	}
	for _, tt := range []struct {
		name, token, want string
	}{
		{"a word", "not-a-token", "malformed"},
		{"an admin token one character off", testAdmin[:len(testAdmin)-1] + "X", "malformed"},
		{"three parts of garbage", "a.b.c", "malformed"},
		{"a signature with a few characters changed", head + "." + payload + "." + flip(flip(sig, 3), 10), "signature does not verify"},
		{"another payload under the signature", head + "." + otherPayload + "." + sig, "signature does not verify"},
		{"another secret", signToken(t, jwt.SigningMethodHS256, []byte("another-secret"), jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix()}), "signature does not verify"},
		{"another algorithm", signToken(t, jwt.SigningMethodHS512, []byte(testSecret), jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix()}), "signature does not verify"},
		{"expired", claims(jwt.MapClaims{"sub": "2", "exp": testNow.Add(-time.Minute).Unix()}), "expired"},
		{"not valid yet", claims(jwt.MapClaims{"sub": "2", "nbf": testNow.Add(time.Hour).Unix(), "exp": testNow.Add(2 * time.Hour).Unix()}), "not valid yet"},
		{"no exp", claims(jwt.MapClaims{"sub": "2"}), "claims"},
		{"a sub that is no user id", claims(jwt.MapClaims{"sub": "bob", "exp": testNow.Add(time.Hour).Unix()}), "claims"},
		{"revoked", userToken(t, carol), "revoked"},
		{"its user deleted", userToken(t, 999), "does not exist"},
	} {
		r := e.do(req{method: "GET", path: "/v1/me/feed", token: tt.token})
		wantStatus(t, r, http.StatusUnauthorized)
		if got := r.errorCode(t); got != "unauthorized" {
			t.Errorf("%s: code %q; want unauthorized", tt.name, got)
		}
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header on a 401", tt.name)
		}
		msg := r.errorMessage(t)
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: message %q; want it to say %q", tt.name, msg, tt.want)
		}
		for _, other := range []string{"expired", "revoked", "does not exist", "malformed", "signature", "not valid yet"} {
			if other != tt.want && !strings.Contains(tt.want, other) && strings.Contains(msg, other) {
				t.Errorf("%s: message %q also says %q", tt.name, msg, other)
			}
		}
	}
}
