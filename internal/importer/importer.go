// Package importer is feedd import: it brings an existing app's users,
// follow graph, posts and likes into the SQL store from JSON Lines files
// (package jsonl: a file of each kind, or feedd export's documents, which
// export.go reads), in batches of multi-row statements, and makes the caches forget what
// the import changed, so that the next read rebuilds it from SQL.
//
// A run is safe while feedd serves: every batch is a transaction that
// takes the store's lock order, counts move by the rows actually
// inserted, and every row is keyed (users by id, edges by their pair,
// posts by author and external id, likes by their pair), so running a
// file again changes nothing. No inbox is written: an imported post is
// old, and a reader's inbox holds the newest posts, so the inboxes of
// the readers whose feeds changed are dropped instead, and rebuilt from
// SQL on their next read.
//
// Memory stays constant whatever the size of the files: a reader
// goroutine parses a file a line at a time into batches, a bounded
// channel hands them to a writer, and nothing is kept across batches
// but the counts.
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/jsonl"
)

// Kind is a kind of file, and of row.
type Kind string

const (
	Users   Kind = "users"
	Follows Kind = "follows"
	Posts   Kind = "posts"
	Likes   Kind = "likes"
	// Lists and ListMembers come in exports only.
	Lists       Kind = "lists"
	ListMembers Kind = "list_members"
)

// Export is a file of every kind, as feedd export writes it: each line
// says its kind (package jsonl).
const Export Kind = "export"

// Kinds is the order a run imports its files in: each kind names rows of
// the kinds before it.
var Kinds = []Kind{Users, Follows, Posts, Likes, Lists, ListMembers}

// Files are the kinds of file a run takes: one for each of Kinds, and
// exports.
var Files = []Kind{Users, Follows, Posts, Likes, Export}

// lineKinds are the lines of each kind in an export.
var lineKinds = map[Kind]jsonl.Kind{Users: jsonl.User, Follows: jsonl.Follow, Posts: jsonl.Post, Likes: jsonl.Like,
	Lists: jsonl.List, ListMembers: jsonl.ListMember}

// Store is what an import needs of SQL (sqlstore.Store; importer_test
// checks it satisfies Store). Its types are the domain's (feed.ImportOutcome
// and the rest), so that the importer does not depend on the SQL store.
type Store interface {
	ImportUsers(ctx context.Context, users []feed.User) ([]feed.ImportOutcome, error)
	ImportFollows(ctx context.Context, edges [][2]int64) (feed.FollowImport, error)
	ImportPosts(ctx context.Context, posts []feed.Post) ([]feed.ImportResult, error)
	Users(ctx context.Context, ids []int64) (map[int64]feed.User, error)
	PostIDsByExternalID(ctx context.Context, keys []feed.ExternalKey) (map[feed.ExternalKey]int64, error)
	ImportLikes(ctx context.Context, likes [][2]int64) (feed.LikeImport, error)
	// A list keeps its id; its members are added one by one, idempotently.
	CreateList(ctx context.Context, l feed.List) (feed.List, error)
	AddListMember(ctx context.Context, owner, id, member int64) (bool, error)
	EachFollower(ctx context.Context, authors []int64, fn func(follower int64)) error
	MarkPulled(ctx context.Context, high int64) (int64, error)
	MarkFeedStale(ctx context.Context, user int64) error
}

// LikeCounters are the cached like counters and recent sets
// (feed.LikeCache and the caches' DropLikes).
type LikeCounters interface {
	SettleLikes(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent, ttl time.Duration) error
	DropLikes(ctx context.Context, user, post int64) error
}

// Caches are the caches the serving processes read, as far as this
// process reaches them; a nil field is a cache it cannot reach (the
// embedded default's lives in the serving process: see Run).
type Caches struct {
	// Inboxes are the readers' home feeds.
	Inboxes feed.Inboxes
	// AuthorLists are the pulled authors' lists of newest posts.
	AuthorLists feed.Inboxes
	Likes       LikeCounters
	// KV holds the delivery modes' epoch (timeline.NewModesEpoch).
	KV feed.KV
	// Streams tells a reader's open live streams that whom it follows
	// changed (FollowsChanged), so that they listen to the new
	// followees.
	Streams feed.Announcer
	// InboxTTL is the inboxes' lifetime; LikeCountTTL the counters'.
	InboxTTL, LikeCountTTL time.Duration
}

// Progress shows how far a file is.
type Progress interface {
	Add(n int64)
	Done()
}

// Options tune a run.
type Options struct {
	// Strict stops the run at the first bad line.
	Strict bool
	// Batch is the rows of one transaction (0: BatchOf the file's kind).
	Batch int
	// Writers is how many batches are written at once (0:
	// DefaultWriters); --strict writes one at a time.
	Writers int
	// Policy is the deployment's delivery policy: in hybrid mode an
	// author that the import takes over the pull threshold is recorded
	// as pulled.
	Policy feed.DeliveryPolicy
	// Shards is the number of logical shards of the store (FEEDD_SHARDS;
	// 0 or 1: one database): an imported post's id carries its author's
	// shard (feed.OnShard), as a published one's does.
	Shards int
	// Bad receives one line per bad line: FILE:LINE: reason.
	Bad io.Writer
	// Progress starts the progress of a file of total lines (0:
	// unknown); nil shows none.
	Progress func(kind Kind, name string, total int64) Progress
	Logger   *slog.Logger
}

// DefaultBatch is the rows of one transaction of users and posts: large
// enough that a commit and the round trips are a small part of its cost.
const DefaultBatch = 2000

// FollowBatch and LikeBatch are the rows of one transaction of follows
// and of likes. A follow batch moves each of its users' counts once, so
// the larger the batch, the fewer user rows an edge costs: 1,053,305
// edges among 25,000 users went in at 55,000/s in batches of 10,000 and
// 70,000–79,000/s in batches of 50,000 (53 MB peak RSS), when every batch
// locked its users for its whole transaction. A like batch is mostly its
// inserts, and a larger one writes more index pages per read once the
// likes outgrow MariaDB's buffer pool (128 MiB by default): 1,000,000
// likes went in at 41,000–45,000/s in batches of 10,000 (37 MB), 58,700/s
// in batches of 25,000 (55 MB) and 59,600/s in batches of 50,000 (85 MB)
// with that default pool, in one session (docs/performance.md#importing).
const (
	FollowBatch = 50_000
	LikeBatch   = 25_000
)

// BatchOf is the default rows of one transaction of kind.
func BatchOf(kind Kind) int {
	switch kind {
	case Follows:
		return FollowBatch
	case Likes:
		return LikeBatch
	}
	return DefaultBatch
}

// maxBatchBytes ends a batch early when its lines are long (posts with
// large data): memory holds a few batches, whatever the lines.
const maxBatchBytes = 8 << 20

// DefaultWriters is how many transactions a run keeps going: two keep
// the database busy while the other waits on a round trip or its
// commit's flush; more only queue on the locks the batches share (a much
// followed user is in most follow batches).
const DefaultWriters = 2

// Source is one file to import.
type Source struct {
	// Kind is the kind of every line, or Export: then the lines say
	// theirs, and the file is read once per kind (R is rewound if it is
	// an io.Seeker, else copied to a temporary file first).
	Kind Kind
	// Name is the file's name as the bad lines cite it ("-" for stdin).
	Name string
	R    io.Reader
	// Lines is the file's line count if known (for the progress), or 0.
	Lines int64
	// tagged says the pass over an export whose kind Kind now is.
	tagged bool
}

// Counts are one kind's totals.
type Counts struct {
	// Read lines, of which Imported were new, Unchanged were in the store
	// already, and Skipped were bad (reported to Options.Bad).
	Read, Imported, Unchanged, Skipped int64
}

// Summary is a run's totals per kind, and what it took.
type Summary struct {
	Counts  map[Kind]*Counts
	Seconds map[Kind]float64
	// NotCarried counts the lines of an export of kinds an import does
	// not carry (profile, marker, mute, block): read, and left out.
	NotCarried map[jsonl.Kind]int64
	// CacheErrors counts the cache entries the run failed to drop or
	// correct: they stay stale until they expire.
	CacheErrors int64
}

// ErrSkipped is returned, wrapped, when a run skipped bad lines.
var ErrSkipped = errors.New("importer: bad lines were skipped")

// LineError is a bad line; Run returns it in strict mode.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// Run imports sources in the order of Kinds (users first, likes last),
// whatever order they are given in; an export takes part in every kind's
// turn with its lines of that kind. It returns the summary and an error
// wrapping ErrSkipped if any line was bad (in strict mode the first bad
// line's LineError, after which nothing more is read), or what failed.
//
// A line that is not of the format (a key its kind does not have, which
// would be lost; a line of an export in a file of one kind) stops the run
// whatever the mode, with its LineError, and nothing of its batch is
// written: the file needs fixing, not skipping a line at a time.
//
// The caches it cannot reach are not corrected: with the embedded
// default's in-process cache, the serving process keeps the inboxes it
// holds until it restarts (docs/operations.md).
func Run(ctx context.Context, store Store, caches Caches, opts Options, sources []Source) (Summary, error) {
	if opts.Batch < 0 {
		opts.Batch = 0
	}
	if opts.Writers <= 0 {
		opts.Writers = DefaultWriters
	}
	if opts.Strict {
		// Strict stops at the first bad line: the batches go in order.
		opts.Writers = 1
	}
	if opts.Bad == nil {
		opts.Bad = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &run{store: store, caches: caches, opts: opts,
		sum: Summary{Counts: map[Kind]*Counts{}, Seconds: map[Kind]float64{}, NotCarried: map[jsonl.Kind]int64{}}}
	for _, k := range Kinds {
		r.sum.Counts[k] = &Counts{}
	}
	sources, err := rewindable(sources)
	if err != nil {
		return r.sum, err
	}
	defer closeSpooled(sources)
	for _, k := range Kinds {
		for _, src := range sources {
			switch src.Kind {
			case k:
			case Export:
				if err := rewind(src); err != nil {
					return r.sum, err
				}
				src.Kind, src.tagged = k, true
			default:
				continue
			}
			start := time.Now()
			err := r.file(ctx, src)
			r.sum.Seconds[k] += time.Since(start).Seconds()
			if err != nil {
				return r.sum, err
			}
		}
		if k == Follows {
			if err := r.followsDone(ctx); err != nil {
				return r.sum, err
			}
		}
	}
	r.sum.CacheErrors = r.cacheErrs.Load()
	var skipped int64
	for _, c := range r.sum.Counts {
		skipped += c.Skipped
	}
	if skipped > 0 {
		return r.sum, fmt.Errorf("%w: %d of them", ErrSkipped, skipped)
	}
	return r.sum, nil
}

// run is one Run's state.
type run struct {
	store  Store
	caches Caches
	opts   Options
	sum    Summary
	mu     sync.Mutex // guards Bad and the counts while a file runs
	// followed says a follow was imported: the cached lists of pulled
	// followees are stale.
	followed  atomic.Bool
	cacheErrs atomic.Int64
}

// item is one good line, parsed, on its way to the writer.
type item[T any] struct {
	line int
	row  T
}

// bad reports a bad line; in strict mode it returns the error that stops
// the run.
func (r *run) bad(kind Kind, file string, line int, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Counts[kind].Skipped++
	e := &LineError{File: file, Line: line, Reason: reason}
	fmt.Fprintln(r.opts.Bad, e.Error())
	if r.opts.Strict {
		return e
	}
	return nil
}

func (r *run) count(kind Kind, read, imported, unchanged int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.sum.Counts[kind]
	c.Read += read
	c.Imported += imported
	c.Unchanged += unchanged
}

// file imports one source: a reader goroutine parses lines into batches,
// the calling goroutine's writer stores them.
func (r *run) file(ctx context.Context, src Source) error {
	var p Progress = nopProgress{}
	if r.opts.Progress != nil {
		p = r.opts.Progress(src.Kind, src.Name, src.Lines)
	}
	defer p.Done()
	switch src.Kind {
	case Users:
		return pipeline(ctx, r, src, p, r.parseUser, r.writeUsers, r.profile)
	case Follows:
		return pipeline(ctx, r, src, p, r.parseFollow, r.writeFollows, nil)
	case Posts:
		return pipeline(ctx, r, src, p, r.parsePost, r.writePosts, nil)
	case Likes:
		return pipeline(ctx, r, src, p, r.parseLike, r.writeLikes, nil)
	case Lists:
		return pipeline(ctx, r, src, p, r.parseList, r.writeLists, nil)
	case ListMembers:
		return pipeline(ctx, r, src, p, r.parseListMember, r.writeListMembers, nil)
	}
	return fmt.Errorf("importer: unknown kind %q", src.Kind)
}

// pipeline runs parse over src's lines on one goroutine, handing batches
// of good rows through a short channel to write. A line that does not
// parse is reported and counted as read and skipped; write counts the
// rest. In an export, amend (if not nil) may complete the row before a
// line of another kind with it (a user's profile, which follows its user
// line), and reports whether it did: a batch is handed on only when the
// next row comes, so that its last row can still be completed.
func pipeline[T any](ctx context.Context, r *run, src Source, p Progress,
	parse func(line []byte) (T, error),
	write func(ctx context.Context, src Source, batch []item[T]) error,
	amend func(last *T, line []byte) (bool, error)) error {
	g, ctx := errgroup.WithContext(ctx)
	// Writers batches in flight and as many queued: the reader parses
	// the next while the writers store theirs, and memory holds a few
	// batches at most. A batch may end with the strict mode's stop, which
	// its writer returns once it stored the lines before it: one of those
	// may be bad too, and the first bad line is the one to stop at (with
	// several writers, a batch before it may still be in flight).
	type batchOf struct {
		items []item[T]
		stop  *LineError
	}
	writers := r.opts.Writers
	rows := r.opts.Batch
	if rows == 0 {
		rows = BatchOf(src.Kind)
	}
	ch := make(chan batchOf, writers)
	g.Go(func() error {
		defer close(ch)
		lr := jsonl.NewReader(src.R)
		batch := make([]item[T], 0, rows)
		var lines, size int64
		flush := func(stop *LineError) error {
			p.Add(lines)
			lines, size = 0, 0
			if len(batch) == 0 && stop == nil {
				return nil
			}
			select {
			case ch <- batchOf{items: batch, stop: stop}:
			case <-ctx.Done():
				return ctx.Err()
			}
			batch = make([]item[T], 0, rows)
			return nil
		}
		for {
			line, err := lr.Next()
			if errors.Is(err, io.EOF) {
				return flush(nil)
			}
			if err != nil {
				return fmt.Errorf("importer: read %s: %w", src.Name, err)
			}
			lines++
			var reason string
			var row T
			switch {
			case lr.Long():
				reason = fmt.Sprintf("line longer than %d bytes", jsonl.MaxLine)
			case jsonl.Blank(line):
				continue // blank lines are allowed, and not rows
			default:
				var ours, amended bool
				if ours, err = r.admit(src, line); err == nil && !ours {
					if src.tagged && amend != nil && len(batch) > 0 {
						amended, err = amend(&batch[len(batch)-1].row, line)
					}
					if err == nil {
						if !amended {
							r.notCarried(src, line)
						}
						continue
					}
				}
				if err == nil {
					row, err = parse(line)
				}
				var fe *formatError
				var ke *jsonl.KeyError
				if errors.As(err, &fe) || errors.As(err, &ke) {
					// The file is not what the import reads: stop before
					// this batch is written, whatever --strict says.
					p.Add(lines)
					r.count(src.Kind, 1, 0, 0)
					_ = r.bad(src.Kind, src.Name, lr.Line(), err.Error())
					return &LineError{File: src.Name, Line: lr.Line(), Reason: err.Error()}
				}
				if err != nil {
					reason = err.Error()
				}
			}
			if reason != "" {
				if r.opts.Strict {
					return flush(&LineError{File: src.Name, Line: lr.Line(), Reason: reason})
				}
				r.count(src.Kind, 1, 0, 0)
				_ = r.bad(src.Kind, src.Name, lr.Line(), reason) // not strict: nil
				continue
			}
			if len(batch) == rows || size >= maxBatchBytes {
				if err := flush(nil); err != nil {
					return err
				}
			}
			batch = append(batch, item[T]{line: lr.Line(), row: row})
			size += int64(len(line))
		}
	})
	for range writers {
		g.Go(func() error {
			for b := range ch {
				if len(b.items) > 0 {
					if err := write(ctx, src, b.items); err != nil {
						return err
					}
				}
				if b.stop != nil {
					r.count(src.Kind, 1, 0, 0)
					return r.bad(src.Kind, b.stop.File, b.stop.Line, b.stop.Reason)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// outcomes counts a written batch's outcomes and reports its bad rows.
func outcomes[T any](r *run, src Source, batch []item[T], out []feed.ImportOutcome, why func(i int, o feed.ImportOutcome) string) error {
	var imported, unchanged int64
	for _, o := range out {
		switch o {
		case feed.Imported:
			imported++
		case feed.Unchanged:
			unchanged++
		}
	}
	r.count(src.Kind, int64(len(batch)), imported, unchanged)
	for i, o := range out {
		if o == feed.Imported || o == feed.Unchanged {
			continue
		}
		if err := r.bad(src.Kind, src.Name, batch[i].line, why(i, o)); err != nil {
			return err
		}
	}
	return nil
}

type nopProgress struct{}

func (nopProgress) Add(int64) {}
func (nopProgress) Done()     {}
