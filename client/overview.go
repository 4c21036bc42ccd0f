package client

import (
	"context"
	"net/http"
	"time"
)

// Overview is the whole deployment as the ops console shows it: GET
// /v1/admin/overview. Figures a backend could not give are nil, and
// Problems says which and why.
type Overview struct {
	At time.Time `json:"at"`
	// WindowSeconds is the span the rates and latencies cover: the last
	// minute, less for a deployment younger than that.
	WindowSeconds float64 `json:"window_seconds"`
	// HeartbeatSeconds is how often each process reports; one silent for
	// three reports is no longer listed.
	HeartbeatSeconds float64 `json:"heartbeat_seconds"`
	// Publish is POST /v1/posts and Read GET /v1/me/feed, summed over the
	// serving processes.
	Publish Traffic `json:"publish"`
	Read    Traffic `json:"read"`
	// Fanout is the work processes' fan-out, summed.
	Fanout Fanout `json:"fanout"`
	// Outbox, Queues and Degradation are read at the time of the request.
	Outbox      Outbox              `json:"outbox"`
	Queues      []QueueFigures      `json:"queues"`
	Degradation OverviewDegradation `json:"degradation"`
	// Breakers are the circuit breakers by name, each at its worst over
	// the processes.
	Breakers  []Breaker `json:"breakers"`
	Processes []Process `json:"processes"`
	Problems  []string  `json:"problems"`
}

// Traffic is one route's requests over the window. The latencies are nil
// when no request was answered in it.
type Traffic struct {
	PerSecond float64 `json:"per_second"`
	// ErrorsPerSecond counts the answers with a 5xx status.
	ErrorsPerSecond float64  `json:"errors_per_second"`
	P50Ms           *float64 `json:"p50_ms"`
	P99Ms           *float64 `json:"p99_ms"`
}

// Fanout is how far the fan-out runs behind the posts it delivers: the
// time from a post's creation to a batch of its inbox writes (nil when
// nothing was fanned out in the window), and inboxes written per second.
type Fanout struct {
	LagP50Ms             *float64 `json:"lag_p50_ms"`
	LagP99Ms             *float64 `json:"lag_p99_ms"`
	InboxWritesPerSecond float64  `json:"inbox_writes_per_second"`
}

// Outbox is the SQL outbox's events not yet confirmed by the broker; nil
// fields when SQL did not answer.
type Outbox struct {
	Unsent           *int64   `json:"unsent"`
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
}

// QueueFigures is one broker queue (QueuePosts, QueueTasks, QueueLikes):
// messages ready and dead letters, nil when the broker did not answer.
type QueueFigures struct {
	Name        string `json:"name"`
	Depth       *int64 `json:"depth"`
	DeadLetters *int64 `json:"dead_letters"`
}

// OverviewDegradation is the switches L1-L4 as the answering process holds
// them, and the level.
type OverviewDegradation struct {
	Switches map[string]bool `json:"switches"`
	Level    int             `json:"level"`
}

// BreakerState is one circuit breaker: "sql", "sql likes" or "redis
// <host:port>", and its State: closed, half-open or open.
type BreakerState struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// Breaker is one circuit breaker over the deployment, at its worst state
// over the processes that have it: Open of Processes hold it open.
type Breaker struct {
	BreakerState
	Open      int `json:"open"`
	Processes int `json:"processes"`
}

// Process is one live feedd process as its last heartbeat showed it, with
// its own figures.
type Process struct {
	// ID is host:pid.
	ID            string         `json:"id"`
	Role          string         `json:"role"`
	Host          string         `json:"host"`
	PID           int            `json:"pid"`
	Version       string         `json:"version"`
	StartedAt     time.Time      `json:"started_at"`
	LastSeen      time.Time      `json:"last_seen"`
	WindowSeconds float64        `json:"window_seconds"`
	Publish       Traffic        `json:"publish"`
	Read          Traffic        `json:"read"`
	Fanout        Fanout         `json:"fanout"`
	Breakers      []BreakerState `json:"breakers"`
}

// Overview returns the figures of the whole deployment the ops console
// shows (admin). GET /v1/admin/overview.
func (c *Client) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/admin/overview", want: http.StatusOK, out: &o})
	return o, err
}

// The broker queues, as QueueFigures.Name and RequeueDeadLetters name them.
const (
	QueuePosts = "posts"
	QueueTasks = "tasks"
	QueueLikes = "likes"
)

// Requeued is how many dead letters a RequeueDeadLetters moved back, by
// queue; a queue not asked for moved none.
type Requeued struct {
	Posts int `json:"posts"`
	Tasks int `json:"tasks"`
	Likes int `json:"likes"`
}

// RequeueDeadLetters moves the dead letters of queue (QueuePosts,
// QueueTasks, QueueLikes; "" for all three) back onto it for the work
// processes to handle, once the cause of their failures is fixed (admin).
// POST /v1/admin/dead-letters/requeue. It is not retried: each call moves
// what is dead when it runs, and the counts of an attempt whose answer was
// lost would be lost with it, so the operator decides whether to call
// again.
func (c *Client) RequeueDeadLetters(ctx context.Context, queue string) (Requeued, error) {
	var body any
	if queue != "" {
		body = map[string]string{"queue": queue}
	}
	var out struct {
		Requeued Requeued `json:"requeued"`
	}
	err := c.call(ctx, request{method: http.MethodPost, path: "/v1/admin/dead-letters/requeue", body: body, want: http.StatusOK, out: &out})
	return out.Requeued, err
}
