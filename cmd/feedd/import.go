package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/importer"
	"github.com/feedd/feedd/internal/likes"
	"github.com/feedd/feedd/internal/progress"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/stream"
)

// runImport is `feedd import`: an existing app's users, follows, posts
// and likes from JSON Lines files into the configured store, while feedd
// serves (docs/operations.md, "Importing an existing app's data"). A
// command of its own, like requeue-dead: it has flags no role has.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	f := newFlagSet("feedd import", getenv, stderr, `usage: feedd import [--users F] [--follows F] [--posts F] [--likes F] [--export F] [flags]

Imports an existing app's data from JSON Lines files (one JSON object a
line; - reads standard input), in the order users, follows, posts, likes:
  users    {"id":"42","name":"alice"}
  follows  {"follower_id":"42","followee_id":"7"}
  posts    {"author_id":"42","external_id":"blog-9913","content":"...","created_at":"2019-05-01T12:00:00Z","data":{...}}
  likes    {"user_id":"42","author_id":"7","external_id":"blog-9913"}
  export   what feedd export writes: lines of every kind, each with its
           "kind"; a profile gives its user's creation time; marker,
           mute and block lines are not imported (counted and said)
A key a line's kind does not have stops the import at that line.
Running a file again changes nothing. A bad line is reported as FILE:LINE:
reason and skipped (--strict stops at it); the exit status is 1 if any
was. Safe while feedd serves; see docs/operations.md.
`)
	files := map[importer.Kind]*string{}
	for _, k := range importer.Kinds {
		files[k] = new(string)
		f.str(files[k], string(k), "", "JSON Lines file of "+string(k)+" to import (- reads standard input)")
	}
	files[importer.Export] = new(string)
	f.str(files[importer.Export], "export", "", "a feedd export (what feedd export writes) to import as it is (- reads standard input)")
	var strict bool
	var batch, writers int
	f.boolean(&strict, "strict", false, "stop at the first bad line instead of reporting and skipping it")
	f.own("batch", fmt.Sprintf("rows per transaction (default %d follows, %d likes, %d users or posts)", importer.FollowBatch, importer.LikeBatch, importer.DefaultBatch),
		bind(intKind, &batch, 0, func(n int) error { return checkRange(n, 1, maxImportBatch) }))
	f.own("writers", "transactions at once (--strict: one)", bind(intKind, &writers, importer.DefaultWriters, func(n int) error { return checkRange(n, 1, 16) }))
	// The deployment's settings are the roles' own: same flags, same
	// environment variables, a flag winning.
	var cfg config
	f.settings(&cfg, "mysql-dsn", "postgres-dsn", "shards", "shard-dsns", "data-dir", "redis-url", "redis-cluster", "redis-prefix", "inbox-groups", "inbox-max", "fanout-mode", "pull-threshold", "active-days", "log-level")
	f.reword("redis-url", "Redis URL of the deployment, whose cached inboxes and counters the import corrects; empty: the serving feedd's own memory, which the import cannot reach")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := cfg.checkSQL(); err != nil {
		return err
	}
	usage := func() { f.help(stderr) }
	policy := feed.DeliveryPolicy{Mode: cfg.fanoutMode, PullThreshold: int64(cfg.pullAt)}
	stdins := 0
	for _, k := range importer.Files {
		if *files[k] == "-" {
			stdins++
		}
	}
	if stdins > 1 {
		return usageError{errors.New("import: only one file can be standard input")}
	}
	var sources []importer.Source
	for _, k := range importer.Files {
		name := *files[k]
		if name == "" {
			continue
		}
		src := importer.Source{Kind: k, Name: name}
		if name == "-" {
			src.R = stdin
		} else {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			defer f.Close()
			if src.Lines, err = countLines(f); err != nil {
				return fmt.Errorf("import: %s: %w", name, err)
			}
			src.R = f
		}
		sources = append(sources, src)
	}
	if len(sources) == 0 {
		usage()
		return usageError{errors.New("import: name at least one file: --users, --follows, --posts, --likes or --export")}
	}

	logger := newLogger(stderr, cfg.logLevel, "text")
	store, err := openStore(ctx, cfg, sqlstore.Pools{Write: 4}, sqlstore.Timeouts{})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	caches := importer.Caches{InboxTTL: cfg.inboxTTL(), LikeCountTTL: likes.DefaultCountTTL}
	if cfg.redis() {
		client, err := rediscache.NewClient(cfg.redisURL, cfg.redisCluster, 0)
		if err != nil {
			return fmt.Errorf("FEEDD_REDIS_URL: %w", err)
		}
		defer client.Close()
		rc := rediscache.New(client, rediscache.Options{Prefix: cfg.redisPrefix, InboxMax: cfg.inboxMax, InboxGroups: cfg.inboxGroups})
		if err := rc.Ping(ctx); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		caches.Inboxes, caches.Likes, caches.KV = rc, rc, rc
		caches.Streams = stream.NewAnnouncer(rc)
		// Whatever the mode now: lists left from a hybrid period go too.
		caches.AuthorLists = rediscache.New(client, rediscache.Options{Prefix: cfg.redisPrefix + rediscache.AuthorListPrefix, InboxMax: authorListMax, InboxGroups: cfg.inboxGroups})
	} else {
		fmt.Fprintln(stderr, "import: no FEEDD_REDIS_URL: the cache is the serving feedd's own memory, which this command cannot reach; restart feedd after the import so that its feeds are rebuilt from SQL")
	}
	sum, err := importer.Run(ctx, store, caches, importer.Options{
		Strict: strict, Batch: batch, Writers: writers, Policy: policy, Shards: shardCount(store), Bad: stderr, Logger: logger,
		Progress: func(k importer.Kind, name string, total int64) importer.Progress {
			return progress.New(stderr, string(k)+" "+name, total)
		},
	}, sources)
	writeSummary(stdout, sum)
	for _, k := range slices.Sorted(maps.Keys(sum.NotCarried)) {
		fmt.Fprintf(stderr, "import: %d line(s) of kind %s not imported: feedd import does not carry that kind\n", sum.NotCarried[k], k)
	}
	if sum.CacheErrors > 0 {
		fmt.Fprintf(stderr, "import: %d cache entries could not be dropped or corrected; they stay stale until they expire\n", sum.CacheErrors)
		if err == nil {
			err = errors.New("import: the cache was not fully corrected")
		}
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// writeSummary prints the totals per kind.
func writeSummary(w io.Writer, sum importer.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tread\timported\tunchanged\tskipped\tseconds\trows/s\t")
	for _, k := range importer.Kinds {
		c := sum.Counts[k]
		if c == nil || c.Read == 0 && sum.Seconds[k] == 0 {
			continue
		}
		s := sum.Seconds[k]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%.0f\t\n", k, c.Read, c.Imported, c.Unchanged, c.Skipped, s, float64(c.Read)/max(s, 1e-9))
	}
	tw.Flush()
}

// countLines counts f's lines, for the progress bar's total, and rewinds
// it; one pass at the disk's speed, a small part of the import's time.
func countLines(f *os.File) (int64, error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var n int64
	buf := make([]byte, 1<<20)
	last := byte('\n')
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if k > 0 {
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	_, err := f.Seek(0, io.SeekStart)
	return n, err
}

// maxImportBatch bounds --batch: a follow batch holds the row locks of
// its users from its count update to its commit, and live follows of
// those users wait; memory grows with it (75 MB of peak RSS at 100,000
// follows).
const maxImportBatch = 100_000

// checkRange refuses a count outside least..most.
func checkRange(n, least, most int) error {
	if n < least || n > most {
		return fmt.Errorf("want %d to %d", least, most)
	}
	return nil
}
