package fanout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
)

// Cache is what the dispatcher needs of the cache: inbox writes and the
// split lock.
type Cache interface {
	Inboxes
	feed.KV
}

// AuthorLists is where a pulled author's post goes instead of its
// followers' inboxes: the author's own list of newest post ids, which
// readers merge at read time (and lists' feeds, for any author). Pushing
// skips an absent list.
type AuthorLists interface {
	PushToInboxes(ctx context.Context, authors []int64, id int64) error
}

// Dispatcher handles post events.
type Dispatcher struct {
	cfg         Config
	store       Store
	cache       Cache
	authorLists AuthorLists    // authors' lists (nil: none)
	pub         feed.Publisher // the tasks queue; a feed.QueueDepth too gives splits back-pressure
	logger      *slog.Logger
	metrics     *metrics
	pusher      pusher
}

func newDispatcher(logger *slog.Logger, cfg Config, store Store, cache Cache, authorLists AuthorLists, pub feed.Publisher, m *metrics) *Dispatcher {
	cfg = cfg.withDefaults()
	return &Dispatcher{
		cfg: cfg, store: store, cache: cache, authorLists: authorLists, pub: pub, metrics: m,
		logger: logger.With("component", "dispatcher"),
		pusher: pusher{inboxes: cache, metrics: m, batch: cfg.BatchSize},
	}
}

// New returns a dispatcher and a worker sharing one set of metrics.
// authorLists holds pulled authors' lists of post ids (nil unless some
// author can be pulled); reg may be nil.
func New(logger *slog.Logger, cfg Config, store Store, cache Cache, authorLists AuthorLists, pub feed.Publisher, reg prometheus.Registerer) (*Dispatcher, *Worker) {
	cfg = cfg.withDefaults()
	m := newMetrics(reg)
	store = boundedStore{Store: store, slots: make(chan struct{}, cfg.SQLReads)}
	return newDispatcher(logger, cfg, store, cache, authorLists, pub, m), newWorker(logger, cfg, store, cache, m)
}

// boundedStore lets at most cap(slots) follower reads run at once
// (Config.SQLReads); a read waits for a slot.
type boundedStore struct {
	Store
	slots chan struct{}
}

func (b boundedStore) acquire(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b boundedStore) release() { <-b.slots }

func (b boundedStore) Followers(ctx context.Context, user, after int64, n int) ([]int64, error) {
	if err := b.acquire(ctx); err != nil {
		return nil, err
	}
	defer b.release()
	return b.Store.Followers(ctx, user, after, n)
}

func (b boundedStore) FollowersInRange(ctx context.Context, user, after, upto int64) ([]int64, error) {
	if err := b.acquire(ctx); err != nil {
		return nil, err
	}
	defer b.release()
	return b.Store.FollowersInRange(ctx, user, after, upto)
}

func (b boundedStore) FollowerRangeEnd(ctx context.Context, user, after int64, n int) (int64, int, error) {
	if err := b.acquire(ctx); err != nil {
		return 0, 0, err
	}
	defer b.release()
	return b.Store.FollowerRangeEnd(ctx, user, after, n)
}

// Handle is the feed.Handler for QueuePosts.
func (d *Dispatcher) Handle(ctx context.Context, del feed.Delivery) error {
	if del.Attempt > 1 {
		d.metrics.redeliveries.WithLabelValues(feed.QueuePosts).Inc()
	}
	ev, err := feed.DecodeEvent(del.Body)
	if err != nil {
		// Retrying cannot fix a malformed event; log it and let it go.
		d.metrics.events.WithLabelValues("invalid").Inc()
		d.logger.Error("dropping malformed post event", "body", string(del.Body), "err", err)
		return nil
	}
	if ev.Kind != feed.EventPostCreated {
		d.metrics.events.WithLabelValues("invalid").Inc()
		d.logger.Warn("ignoring unknown event kind", "kind", ev.Kind)
		return nil
	}
	ctx = feed.WithRequestID(ctx, ev.RequestID)
	d.logger.DebugContext(ctx, "dispatching post", "post", ev.PostID, "author", ev.AuthorID, "attempt", del.Attempt)
	if d.cfg.Announce != nil {
		// First: the streams need no inbox, and readers wait on this.
		if err := d.cfg.Announce.PostCreated(ctx, ev.AuthorID, ev.PostID); err != nil {
			d.logger.WarnContext(ctx, "could not announce the post to the live streams", "post", ev.PostID, "err", err)
		}
	}
	return hold(d.cfg, d.logger, d.metrics.retries.WithLabelValues(feed.QueuePosts), func() error { return d.dispatch(ctx, ev) })
}

// dispatch delivers one post event: into the author's list if it is
// pulled, else into its followers' inboxes, directly or split into tasks,
// and into the author's own: an author's home feed shows its own posts (a
// pulled author's reads merge its own list, as its followers' do).
func (d *Dispatcher) dispatch(ctx context.Context, ev feed.Event) error {
	author, err := d.store.User(ctx, ev.AuthorID)
	if err != nil {
		if feed.ErrorCode(err) == feed.ENOTFOUND {
			return nil
		}
		return fmt.Errorf("dispatcher: author of post %d: %w", ev.PostID, err)
	}
	if d.cfg.Policy.Pulls(author) {
		// Readers merge this author's list at read time: no inbox writes.
		// An absent list is rebuilt from SQL by the first reader.
		d.metrics.events.WithLabelValues("pulled").Inc()
		if d.authorLists == nil {
			return nil
		}
		if err := d.authorLists.PushToInboxes(ctx, []int64{ev.AuthorID}, ev.PostID); err != nil {
			return fmt.Errorf("dispatcher: author list of %d: %w", ev.AuthorID, err)
		}
		return nil
	}
	if d.authorLists != nil {
		// A pushed author's list exists while a list's feed reads it
		// (timeline.ListFeed): it takes the post too. An absent one is
		// skipped, and rebuilt from SQL by its next reader.
		if err := d.authorLists.PushToInboxes(ctx, []int64{ev.AuthorID}, ev.PostID); err != nil {
			return fmt.Errorf("dispatcher: author list of %d: %w", ev.AuthorID, err)
		}
	}
	if author.FollowerCount < int64(d.cfg.DirectFanout) {
		d.metrics.events.WithLabelValues("direct").Inc()
		if err := d.direct(ctx, ev); err != nil {
			return err
		}
		d.metrics.delivered.Observe(time.Since(feed.IDTime(ev.PostID)).Seconds())
		d.logger.DebugContext(ctx, "post delivered", "post", ev.PostID, "how", "direct")
		return nil
	}
	if err := d.pusher.push(ctx, []int64{ev.AuthorID}, ev.PostID); err != nil {
		return fmt.Errorf("dispatcher: push post %d to its author's inbox: %w", ev.PostID, err)
	}
	return d.split(ctx, ev)
}

// direct writes the post into every follower's inbox from here, a page of
// followers at a time, and into its author's own, with the first page.
// Redelivery just rewrites the same entries.
func (d *Dispatcher) direct(ctx context.Context, ev feed.Event) error {
	self := []int64{ev.AuthorID}
	var after int64
	for {
		ids, err := d.store.Followers(ctx, ev.AuthorID, after, d.cfg.BatchSize)
		if err != nil {
			return fmt.Errorf("dispatcher: followers of %d after %d: %w", ev.AuthorID, after, err)
		}
		if readers := append(self, ids...); len(readers) > 0 {
			if err := d.pusher.push(ctx, readers, ev.PostID); err != nil {
				return fmt.Errorf("dispatcher: push post %d: %w", ev.PostID, err)
			}
		}
		self = nil
		if len(ids) < d.cfg.BatchSize {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

const splitDone = "done"

func splitKey(post int64) string { return "split:{" + strconv.FormatInt(post, 10) + "}" }

// split cuts the author's followers into ranges of BatchSize by follower
// id (keyset: each range's end is found by an index scan from the last
// one, never OFFSET) and publishes one task per range.
//
// A lock per post keeps a redelivered event from being split twice while
// the first split runs. The lock is short-lived and renewed while the
// split works, so the lock of a dispatcher that died frees itself within
// LockTTL and the redelivered event is split again from the start; the
// tasks it re-creates carry the same ids and their inbox writes are
// idempotent. A finished split is remembered as "done" for DoneTTL.
func (d *Dispatcher) split(ctx context.Context, ev feed.Event) error {
	key := splitKey(ev.PostID)
	owner, err := d.acquire(ctx, key)
	if err != nil || owner == "" {
		return err
	}
	start := time.Now()
	renewCtx, stopRenew := context.WithCancel(ctx)
	defer stopRenew()
	go d.renew(renewCtx, key, owner)

	tasks, err := d.publishTasks(ctx, ev)
	if err != nil {
		_, _ = d.cache.CompareAndDelete(context.WithoutCancel(ctx), key, owner)
		return err
	}
	stopRenew()
	if err := d.cache.Set(ctx, key, splitDone, d.cfg.DoneTTL); err != nil {
		d.logger.Warn("could not mark split done; a redelivery would split again", "post", ev.PostID, "err", err)
	}
	d.metrics.events.WithLabelValues("split").Inc()
	d.metrics.splitDur.Observe(time.Since(start).Seconds())
	d.logger.Debug("split fan-out", "post", ev.PostID, "author", ev.AuthorID, "tasks", tasks, "took", time.Since(start))
	return nil
}

// publishTasks publishes a task per range of the author's followers, a
// hundred per confirmed publish, and returns how many it made.
func (d *Dispatcher) publishTasks(ctx context.Context, ev feed.Event) (int, error) {
	var (
		tasks  int
		bodies [][]byte
	)
	flush := func() error {
		if len(bodies) == 0 {
			return nil
		}
		if err := d.pub.Publish(ctx, feed.QueueTasks, bodies...); err != nil {
			return fmt.Errorf("dispatcher: publish %d tasks of post %d: %w", len(bodies), ev.PostID, err)
		}
		d.metrics.tasks.WithLabelValues("created").Add(float64(len(bodies)))
		bodies = bodies[:0]
		return nil
	}
	rangeEnd := func(after int64) (int64, int, error) {
		upto, count, err := d.store.FollowerRangeEnd(ctx, ev.AuthorID, after, d.cfg.BatchSize)
		if err != nil {
			return 0, 0, fmt.Errorf("dispatcher: split followers of %d after %d: %w", ev.AuthorID, after, err)
		}
		return upto, count, nil
	}
	var after int64
	upto, count, err := rangeEnd(after)
	if err != nil {
		return tasks, err
	}
	for count > 0 {
		// Only a full range can have another after it: find where that
		// one ends first, so that this range's task knows whether it is
		// the last.
		nextUpto, nextCount := upto, 0
		if count >= d.cfg.BatchSize {
			if nextUpto, nextCount, err = rangeEnd(upto); err != nil {
				return tasks, err
			}
		}
		bodies = append(bodies, feed.FanoutTask{
			ID:     fmt.Sprintf("%d:%d", ev.PostID, after),
			PostID: ev.PostID, AuthorID: ev.AuthorID, After: after, Upto: upto,
			RequestID: ev.RequestID, Last: nextCount == 0,
		}.Encode())
		tasks++
		if len(bodies) == 100 {
			if err := d.waitForTasks(ctx); err != nil {
				return tasks, err
			}
			if err := flush(); err != nil {
				return tasks, err
			}
		}
		after, upto, count = upto, nextUpto, nextCount
	}
	return tasks, flush()
}

// waitForTasks waits while the tasks queue is deeper than MaxPendingTasks:
// back-pressure from the workers to the dispatcher. The split lock keeps
// being renewed meanwhile. An unreadable depth does not block.
func (d *Dispatcher) waitForTasks(ctx context.Context) error {
	dp, ok := d.pub.(feed.QueueDepth)
	if !ok || d.cfg.MaxPendingTasks <= 0 {
		return nil
	}
	for {
		n, err := dp.Pending(ctx, feed.QueueTasks)
		if err != nil || n <= d.cfg.MaxPendingTasks {
			return nil
		}
		d.metrics.waits.Inc()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// acquire takes the split lock, waiting while another live dispatcher
// holds it. It returns "" if the split is already done.
func (d *Dispatcher) acquire(ctx context.Context, key string) (string, error) {
	owner := newOwner()
	for {
		ok, err := d.cache.SetNX(ctx, key, owner, d.cfg.LockTTL)
		if err != nil {
			return "", fmt.Errorf("dispatcher: split lock %s: %w", key, err)
		}
		if ok {
			return owner, nil
		}
		v, exists, err := d.cache.Get(ctx, key)
		if err != nil {
			return "", fmt.Errorf("dispatcher: split lock %s: %w", key, err)
		}
		if exists && v == splitDone {
			d.metrics.events.WithLabelValues("duplicate").Inc()
			return "", nil
		}
		// Another dispatcher is splitting (or died doing so and its lock
		// has not expired yet): wait rather than requeue, so the message's
		// delivery count is not spent on waiting.
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(d.cfg.LockTTL / 10):
		}
	}
}

func (d *Dispatcher) renew(ctx context.Context, key, owner string) {
	t := time.NewTicker(d.cfg.LockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := d.cache.CompareAndExpire(ctx, key, owner, d.cfg.LockTTL); err != nil && ctx.Err() == nil {
				d.logger.Warn("could not renew split lock", "key", key, "err", err)
			}
		}
	}
}

func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
