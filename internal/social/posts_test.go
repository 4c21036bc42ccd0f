package social

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/sqlstore"
)

// keysSeen records the idempotency every CreatePost was given.
type keysSeen struct {
	*sqlstore.Store
	seen []feed.Idempotency
}

func (k *keysSeen) CreatePost(ctx context.Context, p feed.Post, idem feed.Idempotency) (feed.Post, bool, error) {
	k.seen = append(k.seen, idem)
	return k.Store.CreatePost(ctx, p, idem)
}

// TestPublishIdempotency: a key is kept for Config.IdempotencyTTL, and a
// repeat answers with the first post.
func TestPublishIdempotency(t *testing.T) {
	ctx := context.Background()
	st := &keysSeen{Store: testStore(t)}
	cache := inmemcache.New(inmemcache.Options{})
	defer cache.Close()
	svc := New(slog.New(slog.DiscardHandler), Config{IdempotencyTTL: 90 * time.Minute}, st, cache, noTimeline{}, feed.NewIDGen(nil), nil)
	author, err := svc.CreateUser(ctx, 0, "a", "")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"content":"hi"}`))
	idem := feed.Idempotency{Key: "k", Fingerprint: sum[:]}
	first, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "hi"}, idem)
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "hi"}, idem)
	if err != nil || again != first {
		t.Fatalf("repeat: got %+v, %v; want %+v", again, err, first)
	}
	if _, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "hi"}, feed.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	if len(st.seen) != 3 || st.seen[0].TTL != 90*time.Minute || st.seen[1].TTL != 90*time.Minute || st.seen[2].TTL != 0 {
		t.Fatalf("CreatePost got %+v; want a TTL of 90m with the key and none without", st.seen)
	}
	if DefaultConfig().IdempotencyTTL != 24*time.Hour {
		t.Fatalf("default IdempotencyTTL = %s; want 24h", DefaultConfig().IdempotencyTTL)
	}
}
