package census

import (
	"time"

	"github.com/feedd/feedd/internal/degrade"
)

// Overview is the whole deployment as the ops console shows it: GET
// /v1/admin/overview encodes it as is. Figures a backend could not give
// are null, and Problems says which and why in words an operator can act
// on.
type Overview struct {
	At Time `json:"at"`
	// WindowSeconds is the span the rates and latencies cover: the last
	// minute, less for a process that started within it.
	WindowSeconds float64 `json:"window_seconds"`
	// HeartbeatSeconds is how often each process reports; a process is
	// dropped after three missed reports.
	HeartbeatSeconds float64 `json:"heartbeat_seconds"`

	// Publish is POST /v1/posts, Read is GET /v1/me/feed, summed over the
	// serving processes; their latencies come from the merged histograms.
	Publish Traffic `json:"publish"`
	Read    Traffic `json:"read"`
	// Fanout is the work processes' fan-out, summed and merged likewise.
	Fanout Fanout `json:"fanout"`

	// Outbox, Queues and Degradation are read at the time of the request
	// from the shared SQL, broker and cache: they are the deployment's,
	// not any one process's.
	Outbox      Backlog     `json:"outbox"`
	Queues      []Queue     `json:"queues"`
	Degradation Degradation `json:"degradation"`
	// Breakers are every process's breakers by name, each at its worst.
	Breakers  []Breaker `json:"breakers"`
	Processes []Process `json:"processes"`
	Problems  []string  `json:"problems"`
}

// Traffic is one route's request rate and latency over the window.
type Traffic struct {
	PerSecond float64 `json:"per_second"`
	// ErrorsPerSecond counts the answers with a 5xx status.
	ErrorsPerSecond float64 `json:"errors_per_second"`
	// P50Ms and P99Ms are null when no request was answered in the window.
	P50Ms *float64 `json:"p50_ms"`
	P99Ms *float64 `json:"p99_ms"`
}

// Fanout is how far the fan-out runs behind the posts it delivers.
type Fanout struct {
	// LagP50Ms and LagP99Ms are the time from a post's creation to a
	// batch of its inbox writes; null when nothing was fanned out in the
	// window.
	LagP50Ms *float64 `json:"lag_p50_ms"`
	LagP99Ms *float64 `json:"lag_p99_ms"`
	// InboxWritesPerSecond is inboxes pushed to per second.
	InboxWritesPerSecond float64 `json:"inbox_writes_per_second"`
}

// Backlog is the SQL outbox's events not yet confirmed by the broker.
type Backlog struct {
	Unsent           *int64   `json:"unsent"`
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
}

// Queue is one broker queue: posts, tasks or likes.
type Queue struct {
	Name        string `json:"name"`
	Depth       *int64 `json:"depth"`
	DeadLetters *int64 `json:"dead_letters"`
}

// Degradation is the switches L1-L4 as the answering process holds them
// (they are shared through the cache and polled by every process).
type Degradation struct {
	Switches map[degrade.Switch]bool `json:"switches"`
	Level    int                     `json:"level"`
}

// BreakerState is one circuit breaker of one process: "sql" (the
// timeline's), "sql likes" (the likes'), or "redis <host:port>" (one per
// Redis server).
type BreakerState struct {
	Name string `json:"name"`
	// State is closed, half-open or open.
	State string `json:"state"`
}

// Breaker is one circuit breaker over the deployment: at its worst state
// over the processes that have it.
type Breaker struct {
	BreakerState
	// Open is how many processes hold it open, Processes how many have it.
	Open      int `json:"open"`
	Processes int `json:"processes"`
}

// Process is one running feedd process as its last heartbeat showed it.
type Process struct {
	// ID is host:pid.
	ID        string `json:"id"`
	Role      string `json:"role"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	Version   string `json:"version"`
	StartedAt Time   `json:"started_at"`
	LastSeen  Time   `json:"last_seen"`
	// WindowSeconds is the span its own figures cover.
	WindowSeconds float64        `json:"window_seconds"`
	Publish       Traffic        `json:"publish"`
	Read          Traffic        `json:"read"`
	Fanout        Fanout         `json:"fanout"`
	Breakers      []BreakerState `json:"breakers"`
	// ReplicaLagSeconds is how far the process's SQL read replica is
	// behind the primary (feedd_sql_replica_lag_seconds); absent without
	// a replica.
	ReplicaLagSeconds *float64 `json:"replica_lag_seconds,omitempty"`
	// ShardsDown are the logical SQL shards whose server the process
	// sees down (feedd_sql_shard_up 0); absent when none is, or the SQL
	// is one database.
	ShardsDown []int `json:"shards_down,omitempty"`
}

// Time is a time as the API writes every time: RFC 3339 in UTC with
// exactly three fractional digits.
type Time struct{ time.Time }

// MarshalJSON writes t as the API does.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`), nil
}
