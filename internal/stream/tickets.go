package stream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TicketTTL is how long a stream ticket may wait to be redeemed.
const TicketTTL = 60 * time.Second

// Tickets mints and redeems stream tickets: single-use, short-lived
// stand-ins for a token, for EventSource, which cannot send an
// Authorization header (the token itself never goes in a URL). They are
// kept in the shared key-value store, so that a ticket minted by one
// process is redeemed on another.
type Tickets struct {
	kv  feed.KV
	now func() time.Time
}

// NewTickets returns the tickets kept in kv, timed by now.
func NewTickets(kv feed.KV, now func() time.Time) *Tickets {
	return &Tickets{kv: kv, now: now}
}

// Ticket is a redeemed ticket, checked but not spent yet (Spend).
type Ticket struct {
	// User is whom the ticket opens a stream as; Gen is the token
	// generation of the token it was minted with, and TokenExpires that
	// token's expiry (zero: unknown, a ticket minted by an older
	// process): the stream ends with the token.
	User, Gen    int64
	TokenExpires time.Time
	key, value   string
}

func ticketKey(ticket string) string {
	// The cache holds a digest, not the ticket: what it holds cannot be
	// replayed.
	sum := sha256.Sum256([]byte(ticket))
	return "stream-ticket:" + hex.EncodeToString(sum[:])
}

// Mint returns a new ticket for user, minted with a token of generation
// gen that expires at tokenExp, and when the ticket expires.
func (t *Tickets) Mint(ctx context.Context, user, gen int64, tokenExp time.Time) (string, time.Time, error) {
	ticket := rand.Text()
	exp := t.now().UTC().Add(TicketTTL)
	value := fmt.Sprintf("%d:%d:%d:%d", user, gen, exp.UnixMilli(), tokenExp.UnixMilli())
	ok, err := t.kv.SetNX(ctx, ticketKey(ticket), value, TicketTTL)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("stream: store stream ticket: %w", err)
	}
	if !ok { // 130 random bits: never
		return "", time.Time{}, fmt.Errorf("stream: stream ticket collision")
	}
	return ticket, exp, nil
}

// BadTicket is the error of a ticket that opens nothing.
func BadTicket() error {
	return feed.Errorf(feed.EUNAUTHORIZED, "the stream ticket is not valid: it is unknown, used or expired; get a new one")
}

// Check returns what ticket says, unspent: it is spent only once the
// stream is open (Spend), so a stream refused for a limit (429, 503)
// leaves it usable. Whether the token it was minted with still stands is
// the caller's to check.
func (t *Tickets) Check(ctx context.Context, ticket string) (Ticket, error) {
	if t == nil || ticket == "" || len(ticket) > 64 {
		return Ticket{}, BadTicket()
	}
	key := ticketKey(ticket)
	value, ok, err := t.kv.Get(ctx, key)
	if err != nil {
		return Ticket{}, fmt.Errorf("stream: read stream ticket: %w", err)
	}
	if !ok {
		return Ticket{}, BadTicket()
	}
	// user:gen:exp, and the minting token's expiry after them (a ticket
	// minted by an older process has none).
	parts := strings.Split(value, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return Ticket{}, BadTicket()
	}
	var n [4]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return Ticket{}, BadTicket()
		}
		n[i] = v
	}
	if n[0] <= 0 {
		return Ticket{}, BadTicket()
	}
	// The cache's ttl ends it too; the clock check makes expiry exact
	// whatever the cache's resolution.
	if !t.now().Before(time.UnixMilli(n[2])) {
		return Ticket{}, BadTicket()
	}
	tk := Ticket{User: n[0], Gen: n[1], key: key, value: value}
	if len(parts) == 4 {
		tk.TokenExpires = time.UnixMilli(n[3])
	}
	return tk, nil
}

// Spend uses up tk: a ticket works once. Of two requests racing with one
// ticket, the one whose CompareAndDelete removes it wins; the other is
// answered as if the ticket were used.
func (t *Tickets) Spend(ctx context.Context, tk *Ticket) error {
	won, err := t.kv.CompareAndDelete(ctx, tk.key, tk.value)
	if err != nil {
		return fmt.Errorf("stream: consume stream ticket: %w", err)
	}
	if !won {
		return BadTicket()
	}
	return nil
}
