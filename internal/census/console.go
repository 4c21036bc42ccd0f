package census

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
)

// Outbox is the SQL outbox as the console reads it.
type Outbox interface {
	// OutboxOldest returns how many events wait to be relayed and when
	// the oldest of them was written (zero when none waits).
	OutboxOldest(ctx context.Context) (int64, time.Time, error)
}

// Queues is the broker as the console reads and mends it: feed.Broker's
// counts and the requeue of dead letters, which both brokers have.
type Queues interface {
	feed.QueueDepth
	DeadLetters(ctx context.Context, queue string) (int, error)
	// Requeue moves at most max (0: all) of queue's dead letters back
	// onto it with fresh attempts and returns how many it moved.
	Requeue(ctx context.Context, queue string, max int) (int, error)
}

// Switches is the degradation switches as a process holds them.
type Switches interface {
	Snapshot() map[degrade.Switch]bool
	Level() int
}

// Console answers the ops console's overview and requeue for a serving
// process: the heartbeats from the board, the rest from the shared
// backends at the time of the request.
type Console struct {
	logger   *slog.Logger
	self     *Reporter
	board    Board
	outbox   Outbox
	queues   Queues
	switches Switches
}

// callTimeout bounds each backend call of an overview, so that a backend
// that hangs costs the console its figures, not its answer.
const callTimeout = 2 * time.Second

// NewConsole returns the console of the process self reports for.
func NewConsole(logger *slog.Logger, self *Reporter, board Board, outbox Outbox, queues Queues, switches Switches) *Console {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Console{logger: logger.With("component", "census"), self: self, board: board, outbox: outbox, queues: queues, switches: switches}
}

// queueNames are the broker queues the console shows, in its order.
var queueNames = [...]string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes}

// Overview gathers the deployment's figures. A backend that does not
// answer leaves its figures null and adds a line to Problems; the error is
// for the log.
func (c *Console) Overview(ctx context.Context) (Overview, error) {
	o := Overview{
		At:               Time{c.self.cfg.Now().UTC()},
		HeartbeatSeconds: c.self.cfg.Interval.Seconds(),
		Queues:           []Queue{},
		Problems:         []string{},
	}
	problem := func(what string, err error) {
		c.logger.WarnContext(ctx, "census: overview: "+what, "err", err)
		o.Problems = append(o.Problems, what)
	}

	beats := c.beats(ctx, problem)
	c.sum(&o, beats)
	if down := shardsDown(o.Processes); len(down) > 0 {
		o.Problems = append(o.Problems, fmt.Sprintf("SQL shards %s do not answer: feeds are served without their users' posts, marked degraded; those users' own requests fail until the shards return", down))
	}

	call, cancel := context.WithTimeout(ctx, callTimeout)
	n, oldest, err := c.outbox.OutboxOldest(call)
	cancel()
	if err != nil {
		problem("outbox: SQL did not answer", err)
	} else {
		age := 0.0
		if n > 0 && !oldest.IsZero() {
			age = round(max(o.At.Sub(oldest).Seconds(), 0))
		}
		o.Outbox = Backlog{Unsent: &n, OldestAgeSeconds: &age}
	}

	brokerDown := false
	for _, name := range queueNames {
		q := Queue{Name: name}
		if !brokerDown {
			q.Depth, err = c.count(ctx, c.queues.Pending, name)
			if err == nil {
				q.DeadLetters, err = c.count(ctx, c.queues.DeadLetters, name)
			}
			if err != nil {
				// Once the broker failed, the other queues would wait
				// out the same timeout for the same answer.
				brokerDown = true
				q.Depth, q.DeadLetters = nil, nil
				problem("queues: the broker did not answer", err)
			}
		}
		o.Queues = append(o.Queues, q)
	}

	o.Degradation = Degradation{Switches: map[degrade.Switch]bool{}}
	if c.switches != nil {
		o.Degradation = Degradation{Switches: c.switches.Snapshot(), Level: c.switches.Level()}
	}
	return o, nil
}

func (c *Console) count(ctx context.Context, f func(context.Context, string) (int, error), queue string) (*int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	n, err := f(ctx, queue)
	if err != nil {
		return nil, fmt.Errorf("census: queue %s: %w", queue, err)
	}
	v := int64(n)
	return &v, nil
}

// beats returns the live heartbeats. Without the board, or before its
// first write is there, this process's own newest heartbeat stands in for
// itself: the console always shows at least the process that answers.
func (c *Console) beats(ctx context.Context, problem func(string, error)) []beat {
	call, cancel := context.WithTimeout(ctx, callTimeout)
	raw, err := c.board.Beats(call)
	cancel()
	if err != nil {
		problem("processes: the cache did not answer; only this process is shown", err)
	}
	var out []beat
	for name, body := range raw {
		var b beat
		if err := json.Unmarshal(body, &b); err != nil {
			// A process of another version may write what this one
			// cannot read: leave it out, say so once.
			problem("processes: a heartbeat could not be read: "+name, err)
			continue
		}
		out = append(out, b)
	}
	if self, ok := c.self.lastBeat(); ok && !slices.ContainsFunc(out, func(b beat) bool { return b.ID == self.ID }) {
		out = append(out, self)
	}
	slices.SortFunc(out, func(a, b beat) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// sum fills the deployment's traffic, fan-out, breakers and processes from
// the heartbeats: rates add up; histograms merge, so that the percentiles
// are those of every request in the deployment. Should two processes'
// buckets differ (two versions during a rollout), the percentile is the
// worst process's instead.
func (c *Console) sum(o *Overview, beats []beat) {
	var publish, read, lag aggregate
	breakers := map[string]*Breaker{}
	o.Processes = make([]Process, 0, len(beats))
	for _, b := range beats {
		p := b.process()
		o.Processes = append(o.Processes, p)
		o.WindowSeconds = max(o.WindowSeconds, p.WindowSeconds)
		publish.add(b.Publish, p.Publish.P50Ms, p.Publish.P99Ms)
		read.add(b.Read, p.Read.P50Ms, p.Read.P99Ms)
		lag.add(b.Lag, p.Fanout.LagP50Ms, p.Fanout.LagP99Ms)
		o.Publish.PerSecond += p.Publish.PerSecond
		o.Publish.ErrorsPerSecond += p.Publish.ErrorsPerSecond
		o.Read.PerSecond += p.Read.PerSecond
		o.Read.ErrorsPerSecond += p.Read.ErrorsPerSecond
		o.Fanout.InboxWritesPerSecond += p.Fanout.InboxWritesPerSecond
		for _, pb := range p.Breakers {
			all, ok := breakers[pb.Name]
			if !ok {
				all = &Breaker{BreakerState: pb}
				breakers[pb.Name] = all
			}
			all.Processes++
			if pb.State == "open" {
				all.Open++
			}
			if worse(pb.State, all.State) {
				all.State = pb.State
			}
		}
	}
	o.Publish.PerSecond, o.Publish.ErrorsPerSecond = round(o.Publish.PerSecond), round(o.Publish.ErrorsPerSecond)
	o.Read.PerSecond, o.Read.ErrorsPerSecond = round(o.Read.PerSecond), round(o.Read.ErrorsPerSecond)
	o.Fanout.InboxWritesPerSecond = round(o.Fanout.InboxWritesPerSecond)
	o.Publish.P50Ms, o.Publish.P99Ms = publish.quantiles()
	o.Read.P50Ms, o.Read.P99Ms = read.quantiles()
	o.Fanout.LagP50Ms, o.Fanout.LagP99Ms = lag.quantiles()
	o.Breakers = make([]Breaker, 0, len(breakers))
	for _, b := range breakers {
		o.Breakers = append(o.Breakers, *b)
	}
	slices.SortFunc(o.Breakers, func(a, b Breaker) int { return cmp.Compare(a.Name, b.Name) })
}

// aggregate merges the processes' histograms of one figure, and keeps
// their worst percentiles in case they cannot be merged.
type aggregate struct {
	merged   hist
	mixed    bool
	p50, p99 *float64
}

func (a *aggregate) add(h hist, p50, p99 *float64) {
	if !a.merged.merge(h) {
		a.mixed = true
	}
	a.p50, a.p99 = maxOf(a.p50, p50), maxOf(a.p99, p99)
}

func (a *aggregate) quantiles() (p50, p99 *float64) {
	if a.mixed {
		return a.p50, a.p99
	}
	return a.merged.quantileMs(0.5), a.merged.quantileMs(0.99)
}

func maxOf(a, b *float64) *float64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

// worse reports whether breaker state a is worse than b.
func worse(a, b string) bool { return rank(a) > rank(b) }

func rank(state string) int {
	switch state {
	case "open":
		return 2
	case "half-open":
		return 1
	}
	return 0
}

// Requeue moves every dead letter of each queue back onto it, as `feedd
// requeue-dead` does, and returns how many it moved per queue. It stops
// at the first queue that fails, with what it moved so far.
func (c *Console) Requeue(ctx context.Context, queues []string) (map[string]int, error) {
	moved := make(map[string]int, len(queues))
	for _, q := range queues {
		n, err := c.queues.Requeue(ctx, q, 0)
		moved[q] = n
		if err != nil {
			return moved, fmt.Errorf("census: requeue %s: %w", q, err)
		}
	}
	return moved, nil
}

// shardsDown is the union of the shards the processes see down, as
// "2, 3", or "" when none is.
func shardsDown(ps []Process) string {
	var down []int
	for _, p := range ps {
		down = append(down, p.ShardsDown...)
	}
	slices.Sort(down)
	down = slices.Compact(down)
	parts := make([]string, len(down))
	for i, k := range down {
		parts[i] = strconv.Itoa(k)
	}
	return strings.Join(parts, ", ")
}
