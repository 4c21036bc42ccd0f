package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/httpapi"
)

// ownerRoutes are the routes a user token may call only on what its user
// owns: another user's valid token gets 403 there. The route table cannot
// say this (it is the handler's rule), so it is listed here.
var ownerRoutes = map[string]bool{"DELETE /v1/posts/{id}": true, "GET /v1/users/{id}/export": true}

// TestAuthMatrix sends every route of the route table (httpapi.Routes, so
// routes added later are covered without touching this test) with every
// kind of bad credential to the real program over real HTTP: no token,
// malformed ones, an expired one, one with a wrong signature, another
// user's token on what the owner alone may touch, a user token on admin
// routes and the admin token on routes that act as a user. Each gets the
// right 401 or 403 with the standard error body, and afterwards nothing
// has changed: SQL row counts, feeds, profiles.
func TestAuthMatrix(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		alice, aliceTok := in.user("alice")
		bob, bobTok := in.user("bob")
		carol, _ := in.user("carol")
		in.follow(aliceTok, carol)
		in.follow(bobTok, alice)
		post := in.post(aliceTok, "alice's post")
		in.feedEventually(bobTok, 20, []string{post})

		sign := func(secret []byte, method jwt.SigningMethod, sub string, exp time.Time) string {
			key := any(secret)
			if method == jwt.SigningMethodNone {
				key = jwt.UnsafeAllowNoneSignatureType
			}
			tok, err := jwt.NewWithClaims(method, jwt.MapClaims{
				"sub": sub, "iat": time.Now().Add(-2 * time.Hour).Unix(), "exp": exp.Unix(),
			}).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		secret := in.d.jwtSecret
		later := time.Now().Add(time.Hour)
		// Every one of these must be refused with 401 wherever a token is
		// needed.
		unauthenticated := []struct{ name, header string }{
			{"no token", ""},
			{"malformed: not a JWT", "Bearer not-a-token"},
			{"malformed: empty bearer", "Bearer "},
			{"malformed: another scheme", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+aliceTok))},
			{"malformed: token without scheme", aliceTok},
			{"malformed: truncated signature", "Bearer " + aliceTok[:len(aliceTok)-4]},
			{"malformed: alg none", "Bearer " + sign(nil, jwt.SigningMethodNone, alice, later)},
			{"malformed: HS512", "Bearer " + sign(secret, jwt.SigningMethodHS512, alice, later)},
			{"malformed: sub not an id", "Bearer " + sign(secret, jwt.SigningMethodHS256, "alice", later)},
			{"malformed: admin token with a suffix", "Bearer " + in.admin + "x"},
			{"expired", "Bearer " + sign(secret, jwt.SigningMethodHS256, alice, time.Now().Add(-time.Minute))},
			{"wrong signature", "Bearer " + sign([]byte("not the secret"), jwt.SigningMethodHS256, alice, later)},
		}

		before := in.snapshot(aliceTok, bobTok, alice, bob)
		wildcard := regexp.MustCompile(`\{[^}]+\}`)
		body := `{"name":"intruder","content":"intrusion","ttl_seconds":60}`
		var sent, checked int
		for _, rt := range httpapi.Routes() {
			route := rt.Method + " " + rt.Path
			// Wildcards name alice's things: her post under /posts/, else
			// her user id.
			path := wildcard.ReplaceAllStringFunc(rt.Path, func(string) string {
				if strings.Contains(rt.Path, "/posts/{") {
					return post
				}
				return alice
			})
			type attempt struct {
				cred, header string
				want         int
			}
			var attempts []attempt
			switch rt.Access {
			case "anyone", "probe":
				// No token needed: a bad one must not turn the route away.
				for _, c := range unauthenticated {
					attempts = append(attempts, attempt{c.name, c.header, 0})
				}
			case "admin", "reader", "actor":
				for _, c := range unauthenticated {
					attempts = append(attempts, attempt{c.name, c.header, 401})
				}
			default:
				t.Fatalf("route %s has access %q, which this test does not know: teach it", route, rt.Access)
			}
			switch {
			case rt.Access == "admin":
				attempts = append(attempts,
					attempt{"user token on an admin route", "Bearer " + aliceTok, 403},
					attempt{"another user's token on an admin route", "Bearer " + bobTok, 403})
			case rt.Access == "actor":
				attempts = append(attempts, attempt{"admin token on a route acting as a user", "Bearer " + in.admin, 403})
			}
			if ownerRoutes[route] {
				attempts = append(attempts, attempt{"another user's token on the owner's resource", "Bearer " + bobTok, 403})
			}
			for _, a := range attempts {
				var hdr []string
				if a.header != "" {
					hdr = []string{"Authorization", a.header}
				}
				var b any
				if rt.Method == "POST" || rt.Method == "PUT" {
					b = body
				}
				r := in.do(rt.Method, path, "", b, hdr...)
				sent++
				switch {
				case a.want == 0:
					if r.status == 401 || r.status == 403 {
						t.Errorf("%s %s with %s: status %d; want the route open to anyone", rt.Method, path, a.cred, r.status)
					}
					continue
				case r.status != a.want:
					t.Errorf("%s %s with %s: status %d; want %d; body %s", rt.Method, path, a.cred, r.status, a.want, r.raw)
					continue
				}
				wantCode := map[int]string{401: feed.EUNAUTHORIZED, 403: feed.EFORBIDDEN}[a.want]
				if r.errCode() != wantCode {
					t.Errorf("%s %s with %s: error code %q; want %q; body %s", rt.Method, path, a.cred, r.errCode(), wantCode, r.raw)
				}
				if a.want == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s %s with %s: 401 without a WWW-Authenticate: Bearer challenge", rt.Method, path, a.cred)
				}
				checked++
			}
		}
		after := in.snapshot(aliceTok, bobTok, alice, bob)
		if before != after {
			t.Fatalf("the refused requests changed something:\nbefore %s\nafter  %s", before, after)
		}
		t.Logf("%d routes, %d requests with bad credentials, %d refused with the right status and code; state unchanged: %s",
			len(httpapi.Routes()), sent, checked, after)
	})
}

// snapshot renders what a refused request could have changed: row counts
// of every table the API writes, the degradation switches, and two users'
// profiles and feeds.
func (in *instance) snapshot(aliceTok, bobTok, alice, bob string) string {
	in.t.Helper()
	var b strings.Builder
	ctx := context.Background()
	for _, q := range []string{
		"SELECT COUNT(*) FROM users",
		"SELECT COUNT(*) FROM posts",
		"SELECT COUNT(*) FROM posts WHERE deleted_at IS NOT NULL",
		"SELECT COUNT(*) FROM follows",
		"SELECT COUNT(*) FROM outbox",
		"SELECT COUNT(*) FROM idempotency",
	} {
		var n int
		if err := in.sql().DB().QueryRowContext(ctx, q).Scan(&n); err != nil {
			in.t.Fatalf("%s: %v", q, err)
		}
		fmt.Fprintf(&b, "%s=%d ", q[len("SELECT COUNT(*) FROM "):], n)
	}
	for _, u := range []string{alice, bob} {
		r := in.must(http.StatusOK, "GET", "/v1/users/"+u, in.admin, nil)
		fmt.Fprintf(&b, "user %s=%v/%v ", u, r.body["follower_count"], r.body["following_count"])
	}
	// The run-time switches, where the program has them.
	if r := in.do("GET", "/v1/admin/degradation", in.admin, nil); r.status == http.StatusOK {
		fmt.Fprintf(&b, "switches=%s ", strings.TrimSpace(string(r.raw)))
	}
	for _, tok := range []string{aliceTok, bobTok} {
		fmt.Fprintf(&b, "feed=%v ", slices.Clip(in.feedAll(tok, 100)))
	}
	return b.String()
}
