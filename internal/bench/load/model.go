package load

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/stream"
)

// runModel starts the model's feedd (unless measuring a URL), runs the
// scenarios in order, and tears down; a scenario's failure is recorded
// and the next one still runs.
func (r *runner) runModel(ctx context.Context, name, mode string, work int, res *report.ModelResult) (err error) {
	m := &modelRun{name: name, res: res}
	var ch *child
	var workers []*child
	defer func() {
		// Normally stopped by teardown; this catches a failed start.
		for _, w := range workers {
			_ = w.stop()
		}
	}()
	if r.o.URL != "" {
		m.url, m.prefix = r.o.URL, r.o.RedisPrefix
	} else {
		m.prefix = r.o.RunPrefix + name + ":"
		m.amqpPrefix = r.o.RunPrefix + name + "."
		r.cleanModel(ctx, m) // leftovers of an earlier run with --keep
		// A load tool measures capacity, not the limiter: the per-user
		// limits are off unless the caller's own environment sets them
		// (which comes later and wins). Its readers read as fast as they
		// can, a few users each with many requests in flight.
		env := []string{"FEEDD_RATE_USER_WRITE=0", "FEEDD_RATE_USER_READ=0", "FEEDD_USER_MAX_INFLIGHT=0"}
		if slices.Contains(r.o.Scenarios, ScenarioStream) && r.o.StreamClients+100 > stream.DefaultMax {
			env = append(env, fmt.Sprintf("FEEDD_STREAM_MAX=%d", r.o.StreamClients+100))
		}
		env = append(env, r.o.Env...)
		env = append(env,
			"FEEDD_FANOUT_MODE="+mode,
			"FEEDD_REDIS_PREFIX="+m.prefix,
			"FEEDD_AMQP_PREFIX="+m.amqpPrefix,
			"FEEDD_ADDR=127.0.0.1:0",
			"FEEDD_ADMIN_TOKEN="+r.o.AdminToken,
		)
		if r.o.JWTSecret != "" {
			env = append(env, "FEEDD_JWT_SECRET="+r.o.JWTSecret)
		}
		role := "all"
		if work > 0 {
			role = "serve"
		}
		logPath := filepath.Join(r.o.LogDir, "feedd-bench-"+name+".log")
		r.logf("== %s: starting feedd %s (FEEDD_FANOUT_MODE=%s, log %s)", name, role, mode, logPath)
		apiEnv := env
		if slices.Contains(r.o.Scenarios, ScenarioStream) {
			// The stream scenario asks the API process for a garbage
			// collection before each memory sample, through its
			// profiles, on a private port of their own.
			addr, err := freeLoopbackAddr()
			if err != nil {
				return err
			}
			apiEnv = append(slices.Clip(env), "FEEDD_PPROF_ADDR="+addr)
			m.pprof = "http://" + addr
		}
		m.env = env
		ch, err = startChild(ctx, r.o.Exe, []string{role}, apiEnv, logPath, r.o.AdminToken)
		if err != nil {
			return err
		}
		m.url, m.pid = ch.url, ch.cmd.Process.Pid
		for i := range work {
			logPath := filepath.Join(r.o.LogDir, fmt.Sprintf("feedd-bench-%s-work%d.log", name, i+1))
			r.logf("== %s: starting feedd work %d of %d (log %s)", name, i+1, work, logPath)
			w, err := startChild(ctx, r.o.Exe, []string{"work"}, env, logPath, r.o.AdminToken)
			if err != nil {
				_ = ch.stop()
				return err
			}
			workers = append(workers, w)
			m.workers = append(m.workers, newClient(w.url, r.o.AdminToken, 2))
		}
	}
	res.URL = m.url
	m.cl = newClient(m.url, r.o.AdminToken, r.o.Concurrency+16)
	defer m.cl.close()
	defer func() {
		for _, c := range m.workers {
			c.close()
		}
	}()
	if r.rdb != nil {
		// The cache is only used for its inbox calls; it is never closed
		// (that would close the shared client).
		m.cache = rediscache.New(r.rdb, rediscache.Options{Prefix: m.prefix, InboxMax: r.o.InboxMax, InboxGroups: r.o.InboxGroups})
	}
	r.logf("== %s: measuring %s", name, m.url)
	defer func() {
		if terr := r.teardown(ctx, m, ch, workers); terr != nil {
			res.Errors = append(res.Errors, terr.Error())
		}
		workers = nil
	}()

	for _, sc := range runOrder {
		if !slices.Contains(r.o.Scenarios, sc) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch sc {
		case ScenarioFanout:
			res.Fanout, err = r.fanout(ctx, m)
		case ScenarioRead:
			res.Read, err = r.read(ctx, m)
		case ScenarioRanked:
			res.Ranked, err = r.ranked(ctx, m)
		case ScenarioLists:
			res.Lists, err = r.lists(ctx, m)
		case ScenarioSearch:
			res.Search, err = r.search(ctx, m)
		case ScenarioNotifications:
			res.Notifications, err = r.notifications(ctx, m)
		case ScenarioMemory:
			res.Memory, err = r.memory(ctx, m)
		case ScenarioStream:
			res.Stream, err = r.stream(ctx, m)
		case ScenarioPublish:
			res.Publish, err = r.publish(ctx, m)
		}
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", sc, err))
			r.logf("!! %s %s: %v", name, sc, err)
		}
	}
	if slices.Contains(r.o.Scenarios, ScenarioMixed) && ctx.Err() == nil {
		var err error
		if res.Mixed, err = r.mixed(ctx, m); err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", ScenarioMixed, err))
			r.logf("!! %s %s: %v", name, ScenarioMixed, err)
		}
	}
	return nil
}

// teardown deletes the posts bench published (so that the next model sees
// the same data), waits for the relay to hand every event to the broker,
// stops the child and removes its keys and queues, or, against a URL,
// drops the inboxes bench materialized.
func (r *runner) teardown(ctx context.Context, m *modelRun, ch *child, workers []*child) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	var errs []error
	if len(m.created) > 0 {
		err := forEach(ctx, 8, len(m.created), func(ctx context.Context, i int) error {
			p := m.created[i]
			tok, err := r.token(ctx, m, p.author)
			if err != nil {
				return err
			}
			return m.cl.deletePost(ctx, tok, p.id)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete bench posts: %w", err))
		}
	}
	if ch == nil {
		if m.cache != nil && len(m.materialized) > 0 {
			errs = append(errs, r.dropInboxes(ctx, m))
		}
		return errors.Join(errs...)
	}
	// Events not yet relayed would be relayed by the next model's child.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, err := r.metrics(ctx, m)
		if err == nil && s.sum("feedd_outbox_backlog") <= 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, w := range workers {
		if err := w.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ch.stop(); err != nil {
		errs = append(errs, err)
	}
	if !r.o.Keep {
		r.cleanModel(ctx, m)
	}
	return errors.Join(errs...)
}

// cleanModel removes a child model's Redis keys and queues.
func (r *runner) cleanModel(ctx context.Context, m *modelRun) {
	if r.rdb != nil {
		if _, err := deletePrefix(ctx, r.rdb, m.prefix); err != nil {
			r.logf("!! %s: delete keys %s*: %v", m.name, m.prefix, err)
		}
	}
	if err := deleteQueues(r.o.AMQPURL, m.amqpPrefix); err != nil {
		r.logf("!! %s: %v", m.name, err)
	}
}
