package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/stream"
)

// Live is what the live stream needs beyond the timeline and the likes:
// the process's hub of open streams and the shared key-value store that
// holds stream tickets (so that a ticket minted by one process is redeemed
// on another). A nil Live, or a nil Hub, answers the stream 503. The
// services that make changes announce them to the streams themselves.
type Live struct {
	Hub     *stream.Hub
	Tickets feed.KV
}

// streamPath is the stream's route; guardStream leaves it out of the
// in-flight bounds, which a stream would hold for hours: the hub bounds
// streams per user and per process instead.
const streamPath = "/v1/me/feed/stream"

// handleStream is the live stream's own handler (stream.Handler), which
// serves it from the opening to the end, or a 503 when the process has no
// live stream.
func handleStream(tok *tokens, svc Timeline, lk Likes, lv *Live) http.Handler {
	if lv == nil || lv.Hub == nil {
		return handler(func(w http.ResponseWriter, r *http.Request) error {
			if _, err := actingUser(r); err != nil {
				return err
			}
			return feed.Errorf(feed.EUNAVAILABLE, "the live stream is not enabled on this process")
		})
	}
	return stream.NewHandler(lv.Hub, svc, lk, tok.streamTickets(), streamAPI{tok})
}

// getOnly answers anything but GET with 405 before it reaches the stream:
// ServeMux hands a HEAD to a GET route, and the stream would answer it
// 200 and then take the connection, holding a stream's slot for a request
// that reads no body, and sending its events as the answer to whatever
// request is pipelined after it.
func getOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed,
				fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, http.MethodGet))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// streamAPI is what the stream's handler needs of the API.
type streamAPI struct{ tok *tokens }

func (streamAPI) Caller(r *http.Request) (stream.Caller, error) {
	p, _ := r.Context().Value(principalKey{}).(principal)
	if p.admin || p.user == 0 {
		return stream.Caller{}, errNoActor
	}
	return stream.Caller{User: p.user, Gen: p.gen, Expires: p.exp, Ticket: p.ticket}, nil
}

func (a streamAPI) Stands(ctx context.Context, c stream.Caller) error {
	if !c.Expires.IsZero() && !a.tok.now().Before(c.Expires) {
		return feed.Errorf(feed.EUNAUTHORIZED, "the token has expired")
	}
	return a.tok.stands(ctx, verifiedToken{user: c.User, gen: c.Gen})
}

func (streamAPI) Param(r *http.Request, name string) (string, error) {
	q, err := query(r)
	if err != nil {
		return "", err
	}
	return param(q, name)
}

func (streamAPI) Respond(w http.ResponseWriter, err error) { respondError(w, err) }
func (streamAPI) Note(w http.ResponseWriter, err error)    { noteError(w, err) }

type ticketJSON struct {
	Ticket    string `json:"ticket"`
	ExpiresAt string `json:"expires_at"`
}

// handleStreamTicket mints a single-use ticket that opens one stream as
// the caller within stream.TicketTTL, for EventSource, which cannot send
// an Authorization header: the token itself never goes in a URL.
func handleStreamTicket(tok *tokens, svc Timeline, lv *Live) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		if lv == nil || lv.Tickets == nil {
			return feed.Errorf(feed.EUNAVAILABLE, "the live stream is not enabled on this process")
		}
		gen, err := svc.TokenGeneration(r.Context(), me)
		if err != nil {
			return err
		}
		// The ticket's stream ends with the token that minted it.
		p, _ := r.Context().Value(principalKey{}).(principal)
		ticket, exp, err := tok.streamTickets().Mint(r.Context(), me, gen, p.exp)
		if err != nil {
			return err
		}
		encode(w, http.StatusCreated, ticketJSON{Ticket: ticket, ExpiresAt: apijson.Time(exp)})
		return nil
	})
}

// streamTickets are the stream tickets, nil when none can be redeemed.
func (t *tokens) streamTickets() *stream.Tickets {
	if t == nil {
		return nil
	}
	return t.tickets
}

// checkTicket returns the principal a stream ticket was minted for, with
// the ticket held for the stream to spend once open: a stream refused
// for a limit (429, 503) leaves it usable.
func (t *tokens) checkTicket(ctx context.Context, ticket string) (principal, error) {
	tk, err := t.tickets.Check(ctx, ticket)
	if err != nil {
		return principal{}, err
	}
	// Revoking the user's tokens revokes the tickets they minted.
	if err := t.stands(ctx, verifiedToken{user: tk.User, gen: tk.Gen}); err != nil {
		return principal{}, err
	}
	return principal{user: tk.User, gen: tk.Gen, exp: tk.TokenExpires, ticket: &tk}, nil
}
