package main

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestTokenStanding: a user token is accepted only while its user exists
// and until the user's tokens are revoked, on every process. On the
// services stacks a second process (the serve role, as a deployment runs
// it) shares the backends: a revocation made through the first reaches it
// within a second, and a token minted after the revocation, or for a user
// just created, works on it at once. A correctly signed token whose sub
// names no user, or is not the canonical decimal, or whose exp is a
// string, is refused.
func TestTokenStanding(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		procs := []*instance{in}
		if env["FEEDD_REDIS_URL"] != "" {
			procs = append(procs, startRole(t, "serve", env, nil))
		}
		secret := in.d.jwtSecret
		sign := func(claims jwt.MapClaims) string {
			t.Helper()
			if _, ok := claims["exp"]; !ok {
				claims["exp"] = time.Now().Add(time.Hour).Unix()
			}
			tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		_, aliceTok := in.user("alice")
		bob, bobTok := in.user("bob")
		post := in.post(aliceTok, "alice's post")
		// What a token is used for: write, like, read.
		uses := func(in *instance, tok string) []resp {
			return []resp{
				in.do("POST", "/v1/posts", tok, map[string]any{"content": "hi"}),
				in.do("PUT", "/v1/posts/"+post+"/like", tok, nil),
				in.do("GET", "/v1/me/feed", tok, nil),
			}
		}
		wantRefused := func(what string, in *instance, tok string) {
			t.Helper()
			for _, r := range uses(in, tok) {
				if r.status != 401 || r.errCode() != "unauthorized" {
					t.Fatalf("%s through %s: status %d body %s; want 401 unauthorized", what, in.url, r.status, r.raw)
				}
			}
		}
		wantFeed := func(what string, in *instance, tok string) {
			t.Helper()
			if r := in.do("GET", "/v1/me/feed", tok, nil); r.status != 200 {
				t.Fatalf("%s through %s: status %d body %s; want 200", what, in.url, r.status, r.raw)
			}
		}

		for _, p := range procs {
			wantRefused("a signed token for a user that does not exist", p, sign(jwt.MapClaims{"sub": "999999999"}))
			wantRefused("sub with a leading zero", p, sign(jwt.MapClaims{"sub": "0" + bob}))
			wantRefused("sub with a plus", p, sign(jwt.MapClaims{"sub": "+" + bob}))
			wantRefused("exp a string", p, sign(jwt.MapClaims{"sub": bob, "exp": "9999999999"}))
			wantFeed("bob's token", p, bobTok)
		}
		// The refused tokens changed nothing.
		if n := len(in.must(200, "GET", "/v1/users/"+bob+"/posts", aliceTok, nil).items()); n != 0 {
			t.Fatalf("bob has %d posts; want none: every token that tried was refused", n)
		}
		if r := in.must(200, "GET", "/v1/posts/"+post, aliceTok, nil); r.body["like_count"] != float64(0) {
			t.Fatalf("alice's post has like_count %v; want 0", r.body["like_count"])
		}
		in.must(404, "GET", "/v1/users/999999999", aliceTok, nil)

		// Revocation: every process has just accepted bob's token.
		handMade := sign(jwt.MapClaims{"sub": bob, "iat": time.Now().Unix()})
		in.must(204, "DELETE", "/v1/users/"+bob+"/tokens", in.admin, nil)
		revoked := time.Now()
		wantRefused("bob's token right after its revocation, on the process that revoked it", in, bobTok)
		fresh := in.must(201, "POST", "/v1/users/"+bob+"/tokens", in.admin, nil).str("token")
		for _, p := range procs {
			wantFeed("bob's token minted after the revocation", p, fresh)
			wantFeed("alice's token", p, aliceTok)
		}
		time.Sleep(time.Until(revoked.Add(time.Second)))
		for _, p := range procs {
			wantRefused("bob's token a second after its revocation", p, bobTok)
			wantRefused("bob's hand-made token without a generation", p, handMade)
			wantFeed("bob's token minted after the revocation", p, fresh)
		}
		in.must(404, "DELETE", "/v1/users/999999999/tokens", in.admin, nil)

		// A user that one process knows not to exist, created through
		// another: a token minted for it works everywhere at once.
		const lateID = "777777777"
		last := procs[len(procs)-1]
		early := sign(jwt.MapClaims{"sub": lateID, "iat": time.Now().Add(-time.Hour).Unix()})
		wantRefused("a token for a user not created yet", last, early)
		in.must(201, "POST", "/v1/users", in.admin, map[string]any{"name": "late", "id": lateID})
		created := time.Now()
		lateTok := in.must(201, "POST", "/v1/users/"+lateID+"/tokens", in.admin, nil).str("token")
		wantFeed("a token minted for a user just created", last, lateTok)
		time.Sleep(time.Until(created.Add(time.Second)))
		wantFeed("an older token of a user created a second ago", last, early)
	})
}
