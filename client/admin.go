package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// Job returns a background job: the purge of deleted user id (admin). GET
// /v1/admin/jobs/{id}.
func (c *Client) Job(ctx context.Context, id ID) (Job, error) {
	var j Job
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/admin/jobs/", id), want: http.StatusOK, out: &j})
	return j, err
}

// Degradation returns the degradation switches (admin). GET
// /v1/admin/degradation.
func (c *Client) Degradation(ctx context.Context) (Degradation, error) {
	var d Degradation
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/degradation", want: http.StatusOK, out: &d})
	return d, err
}

// SetDegradation turns the switches named (L1 to L4) on or off and leaves
// the others (admin). PUT /v1/admin/degradation.
func (c *Client) SetDegradation(ctx context.Context, switches map[string]bool) (Degradation, error) {
	var d Degradation
	err := c.call(ctx, request{method: http.MethodPut, path: "/v1/admin/degradation", body: switches, want: http.StatusOK, out: &d})
	return d, err
}

// CreateStreamTicket mints a ticket that opens one live stream as the
// token's user within a minute, for a browser's EventSource. POST
// /v1/me/feed/stream-tickets.
func (c *Client) CreateStreamTicket(ctx context.Context) (StreamTicket, error) {
	var t StreamTicket
	err := c.call(ctx, request{method: http.MethodPost, path: "/v1/me/feed/stream-tickets", want: http.StatusCreated, out: &t})
	return t, err
}

// Health reports whether the process answers at all. GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, request{method: http.MethodGet, path: "/healthz", want: http.StatusOK})
}

// Ready returns each dependency's state. GET /readyz. A process that is
// not ready answers its states and an *Error 503 unavailable.
func (c *Client) Ready(ctx context.Context) (Readiness, error) {
	var rd Readiness
	var raw []byte
	// Not retried: a probe wants the state now.
	err := c.call(ctx, request{method: http.MethodGet, path: "/readyz", want: http.StatusOK, out: &rd, raw: &raw, noRetry: true})
	var e *Error
	if errors.As(err, &e) {
		_ = json.Unmarshal(e.body, &rd)
	}
	return rd, err
}

// OpenAPI returns the API's OpenAPI 3 description. GET /v1/openapi.json.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	var raw []byte
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/openapi.json", want: http.StatusOK, raw: &raw})
	return raw, err
}

// Metrics returns the process's Prometheus metrics in the text format.
// GET /metrics.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	var raw []byte
	err := c.call(ctx, request{method: http.MethodGet, path: "/metrics", want: http.StatusOK, raw: &raw,
		header: map[string]string{"Accept": "text/plain;version=0.0.4"}})
	return raw, err
}
