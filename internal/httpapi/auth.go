package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
	"github.com/feedd/feedd/internal/stream"
)

// access says who may call a route.
type access int

const (
	anyone access = iota // no token: the API description
	probe                // no token, and also served by NewProbes: probes and metrics
	admin                // the admin token only
	reader               // the admin token or any user token: reads that need no "me"
	actor                // a user token only: the route acts as the token's user
	// actorOrTicket is actor, or a stream ticket in ?ticket= for a client
	// that cannot send headers (EventSource).
	actorOrTicket
)

// principal is who a request's token names.
type principal struct {
	admin bool
	user  int64 // the token's sub; 0 for the admin
	// gen and exp are the user token's generation and expiry (for a
	// ticket, the minting token's; exp zero: unknown): a stream ends
	// with its token.
	gen int64
	exp time.Time
	// ticket is the stream ticket the request came with, checked but
	// not spent yet (the stream spends it once open); nil for a token.
	ticket *stream.Ticket
}

type principalKey struct{}

// actorFrom returns the user an actor route acts as. It is always the
// token's sub: no route takes the acting user from the path or the body.
func actorFrom(ctx context.Context) (int64, bool) {
	p, ok := ctx.Value(principalKey{}).(principal)
	if !ok || p.admin || p.user == 0 {
		return 0, false
	}
	return p.user, true
}

// actingUser is actorFrom for a handler: a request that reached an actor
// route without a user is a wiring bug (errNoActor), never the client's.
func actingUser(r *http.Request) (int64, error) {
	me, ok := actorFrom(r.Context())
	if !ok {
		return 0, errNoActor
	}
	return me, nil
}

// actingUserAndID is actingUser and the {id} of the path: the two things
// a route that acts on one user needs first.
func actingUserAndID(r *http.Request) (me, id int64, err error) {
	return actingUserAnd(r, pathID)
}

// actingUserAndPostID is actingUserAndID for a route on a post.
func actingUserAndPostID(r *http.Request) (me, id int64, err error) {
	return actingUserAnd(r, pathPostID)
}

func actingUserAnd(r *http.Request, parse func(*http.Request) (int64, error)) (me, id int64, err error) {
	if me, err = actingUser(r); err != nil {
		return 0, 0, err
	}
	id, err = parse(r)
	return me, id, err
}

// standings tells whether a user's tokens stand: the two Timeline methods.
type standings interface {
	TokenGeneration(ctx context.Context, user int64) (int64, error)
	CurrentTokenGeneration(ctx context.Context, user int64) (int64, error)
}

// tokens checks bearer tokens and issues user tokens.
type tokens struct {
	// adminSum is the admin token's digest: comparing fixed-length digests
	// in constant time leaks neither the token nor its length.
	adminSum [sha256.Size]byte
	hasAdmin bool
	secret   []byte
	now      func() time.Time
	parser   *jwt.Parser
	// verified remembers the user tokens that passed verify, by their
	// digest, so that a client's every request does not parse and check
	// the same token again. What can change with time (exp, nbf) is
	// checked on every use.
	verified *lru.Cache[[sha256.Size]byte, verifiedToken]
	// users says, on every use of a user token, whether its user still
	// exists and which token generation is current: what a signature
	// cannot say.
	users standings
	// tickets holds stream tickets (nil: none can be redeemed).
	tickets *stream.Tickets
}

// verifiedToken is what a valid user token says.
type verifiedToken struct {
	user          int64
	gen           int64
	iat, exp, nbf time.Time // iat, nbf zero: none
}

// valid reports whether the token is valid at now, as the JWT parser
// decides it: before exp, and not before nbf.
func (v verifiedToken) valid(now time.Time) bool {
	return now.Before(v.exp) && (v.nbf.IsZero() || !now.Before(v.nbf))
}

const (
	// recentlyMinted is how recent a token's iat must be for a "no such
	// user" to be asked again of SQL: the service's copy is at most a
	// second old, and iat is cut to the second.
	recentlyMinted = 2 * time.Second
	// verifiedTokens bounds the tokens a process remembers (about 150
	// bytes each); a forgotten one is only verified again.
	verifiedTokens = 100_000
	verifiedTTL    = 10 * time.Minute
)

func newTokens(cfg Config, users standings) *tokens {
	return &tokens{
		adminSum: sha256.Sum256([]byte(cfg.AdminToken)),
		hasAdmin: cfg.AdminToken != "",
		secret:   cfg.JWTSecret,
		now:      cfg.Now,
		// Exactly HS256: a token may not pick its own algorithm ("none",
		// or an HMAC of another size), and one without exp never expires.
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(cfg.Now),
		),
		verified: lru.New[[sha256.Size]byte, verifiedToken](verifiedTokens, verifiedTTL, nil),
		users:    users,
	}
}

// require wraps h so that it runs only for a principal that a has room for,
// with the principal in the request's context.
func (t *tokens) require(a access, h http.Handler) http.Handler {
	if a == anyone || a == probe {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p principal
		var err error
		if ticket := r.URL.Query().Get("ticket"); a == actorOrTicket && ticket != "" && r.Header.Get("Authorization") == "" {
			p, err = t.checkTicket(r.Context(), ticket)
		} else {
			p, err = t.authenticate(r)
		}
		if err != nil {
			if feed.ErrorCode(err) == feed.EUNAUTHORIZED {
				w.Header().Set("WWW-Authenticate", `Bearer realm="feedd"`)
			}
			respondError(w, err)
			return
		}
		switch {
		case a == admin && !p.admin:
			respondError(w, feed.Errorf(feed.EFORBIDDEN, "this route needs the admin token"))
			return
		case (a == actor || a == actorOrTicket) && p.admin:
			respondError(w, feed.Errorf(feed.EFORBIDDEN, "this route acts as a user: call it with a user token, not the admin token"))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// authenticate reads the bearer token: the admin token, else a user token.
func (t *tokens) authenticate(r *http.Request) (principal, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return principal{}, feed.Errorf(feed.EUNAUTHORIZED, "missing token: send Authorization: Bearer <token>")
	}
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return principal{}, feed.Errorf(feed.EUNAUTHORIZED, "the Authorization header must be Bearer <token>")
	}
	sum := sha256.Sum256([]byte(token))
	if t.hasAdmin && subtle.ConstantTimeCompare(sum[:], t.adminSum[:]) == 1 {
		return principal{admin: true}, nil
	}
	v, ok := t.verified.Get(sum)
	if !ok || !v.valid(t.now()) {
		var err error
		v, err = t.verify(token)
		if err != nil {
			return principal{}, refusal(err)
		}
		t.verified.Put(sum, v)
	}
	if err := t.stands(r.Context(), v); err != nil {
		return principal{}, err
	}
	return principal{user: v.user, gen: v.gen, exp: v.exp}, nil
}

// refusal says why verify refused a token, each reason in its own words:
// a person who pasted the wrong thing, or a token cut short or altered on
// the way, must not be told it expired or was revoked. The status and code
// stay those of every refused token (401, unauthorized).
func refusal(err error) error {
	var msg string
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		msg = "the token is malformed: it is not the admin token, and not a user token (a JWT: three base64url parts, separated by dots, holding JSON)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		msg = "the token's signature does not verify: the token was altered, or signed with another secret or algorithm than feedd's"
	case errors.Is(err, jwt.ErrTokenExpired):
		msg = "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		msg = "the token is not valid yet (its nbf is in the future)"
	case errors.Is(err, errNoSecret):
		msg = "the token is not valid: this feedd accepts no user tokens"
	default:
		msg = "the token's claims are not those of a feedd user token (sub: a user id, exp, gen)"
	}
	return feed.Errorf(feed.EUNAUTHORIZED, "%s", msg)
}

// stands checks what a token's signature cannot: that its user exists, and
// that no revocation came after it was minted. An unavailable answer is
// the service's error (503), not the client's.
func (t *tokens) stands(ctx context.Context, v verifiedToken) error {
	gen, err := t.users.TokenGeneration(ctx, v.user)
	// The process's answer may be up to a second old. A token newer than
	// it — of a later generation, or minted in the last moments for a user
	// it does not know — was minted after a revocation or a creation it
	// has not seen yet: ask the truth rather than refuse a good token for
	// that second. Old tokens never take this path, so it costs a read only
	// once per change.
	newer := err == nil && v.gen > gen ||
		feed.ErrorCode(err) == feed.ENOTFOUND && v.iat.After(t.now().Add(-recentlyMinted))
	if newer {
		gen, err = t.users.CurrentTokenGeneration(ctx, v.user)
	}
	switch {
	case feed.ErrorCode(err) == feed.ENOTFOUND:
		return feed.Errorf(feed.EUNAUTHORIZED, "the token's user does not exist")
	case err != nil:
		return err
	case v.gen != gen:
		return feed.Errorf(feed.EUNAUTHORIZED, "the token has been revoked")
	}
	return nil
}

// userClaims is what a user token carries: the registered claims and the
// token generation of its user when it was minted.
//
// Revocation compares generations, not times: a JWT's iat has one-second
// resolution, so "minted before the revocation" and "minted just after it"
// can share an iat, and times minted and checked on different processes
// would also depend on their clocks agreeing. A counter in SQL, read when
// the token is minted, orders the two exactly. A token without the claim
// (minted before there was one) is of generation 0, which every user has
// until their tokens are first revoked.
type userClaims struct {
	jwt.RegisteredClaims
	Generation int64 `json:"gen,omitempty"`
}

// The claims a token may carry under a name only case apart from one of
// these would reach the field anyway: encoding/json matches names without
// regard to case.
var claimNames = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "gen"}

// UnmarshalJSON refuses what golang-jwt lets through: a time claim that is
// a string holding a number ("exp":"1999999999" parses, and never expires
// as its issuer meant), and a claim name that differs from a known one
// only by case.
func (c *userClaims) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for name, v := range raw {
		for _, known := range claimNames {
			if name != known && strings.EqualFold(name, known) {
				return fmt.Errorf("claim %q: claim names are lower case", name)
			}
		}
		switch name {
		case "exp", "nbf", "iat":
			if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
				return fmt.Errorf("claim %q is not a number", name)
			}
		}
	}
	type plain userClaims // without this method
	return json.Unmarshal(b, (*plain)(c))
}

var errNoSecret = errors.New("httpapi: no JWT secret configured")

// verify checks a user token and returns what it says.
func (t *tokens) verify(token string) (verifiedToken, error) {
	if len(t.secret) == 0 {
		// An empty HMAC key would make tokens anyone can forge.
		return verifiedToken{}, errNoSecret
	}
	var claims userClaims
	_, err := t.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil {
		return verifiedToken{}, err
	}
	user, err := feed.ParseID(claims.Subject)
	if err != nil {
		return verifiedToken{}, err
	}
	// One user, one spelling: "042" or "+42" would name user 42 through a
	// string no token for 42 was minted with.
	if feed.FormatID(user) != claims.Subject {
		return verifiedToken{}, fmt.Errorf("httpapi: sub %q is not in canonical form", claims.Subject)
	}
	if claims.Generation < 0 {
		return verifiedToken{}, fmt.Errorf("httpapi: negative token generation %d", claims.Generation)
	}
	v := verifiedToken{user: user, gen: claims.Generation, exp: claims.ExpiresAt.Time} // exp is required
	if claims.NotBefore != nil {
		v.nbf = claims.NotBefore.Time
	}
	if claims.IssuedAt != nil {
		v.iat = claims.IssuedAt.Time
	}
	return v, nil
}

// issue signs a token for user, of the user's current token generation
// gen, that lives for ttl and returns it with its expiry. The expiry is
// cut to the second because that is what a JWT's exp holds: expires_at is
// then exactly when the token stops working.
func (t *tokens) issue(user, gen int64, ttl time.Duration) (string, time.Time, error) {
	if len(t.secret) == 0 {
		return "", time.Time{}, errors.New("httpapi: issue token: no JWT secret configured")
	}
	now := t.now().UTC().Truncate(time.Second)
	exp := now.Add(ttl)
	claims := userClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   feed.FormatID(user),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
		Generation: gen,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("httpapi: sign token for %d: %w", user, err)
	}
	return s, exp, nil
}
