package feedtest

import (
	"context"
	"testing"
	"time"
)

// Beats is a cache that keeps the processes' heartbeats (package census):
// short-lived entries of one table shared by the deployment, each with its
// own ttl, listed all at once.
type Beats interface {
	// Beat stores body as name's heartbeat until ttl from now, replacing
	// name's last one.
	Beat(ctx context.Context, name string, body []byte, ttl time.Duration) error
	// Forget deletes name's heartbeat, if any.
	Forget(ctx context.Context, name string) error
	// Beats returns the heartbeats whose ttl has not run out, by name.
	Beats(ctx context.Context) (map[string][]byte, error)
}

// TestBeats runs the behavioural suite of Beats against the cache newBeats
// builds: fresh and empty for each subtest, cleaned up by itself.
func TestBeats(t *testing.T, newBeats func(t *testing.T) Beats) {
	t.Helper()
	ctx := context.Background()
	beat := func(t *testing.T, b Beats, name, body string, ttl time.Duration) {
		t.Helper()
		if err := b.Beat(ctx, name, []byte(body), ttl); err != nil {
			t.Fatalf("Beat(%q): %v", name, err)
		}
	}
	list := func(t *testing.T, b Beats) map[string]string {
		t.Helper()
		m, err := b.Beats(ctx)
		if err != nil {
			t.Fatalf("Beats: %v", err)
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = string(v)
		}
		return out
	}
	want := func(t *testing.T, got, want map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("Beats = %q; want %q", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("Beats = %q; want %q", got, want)
			}
		}
	}

	t.Run("empty", func(t *testing.T) {
		want(t, list(t, newBeats(t)), map[string]string{})
	})

	t.Run("each name keeps its last beat", func(t *testing.T) {
		b := newBeats(t)
		beat(t, b, "web-1:10", `{"n":1}`, longTTL)
		beat(t, b, "web-2:11", `{"n":2} with a space`, longTTL)
		beat(t, b, "web-1:10", `{"n":3}`, longTTL)
		want(t, list(t, b), map[string]string{"web-1:10": `{"n":3}`, "web-2:11": `{"n":2} with a space`})
	})

	t.Run("a beat not renewed within its ttl is gone, the others stay", func(t *testing.T) {
		b := newBeats(t)
		beat(t, b, "dead", "x", shortTTL)
		beat(t, b, "alive", "y", longTTL)
		beat(t, b, "renewed", "z", shortTTL)
		want(t, list(t, b), map[string]string{"dead": "x", "alive": "y", "renewed": "z"})
		time.Sleep(shortTTL / 2)
		beat(t, b, "renewed", "z2", shortTTL)
		time.Sleep(shortTTL/2 + 200*time.Millisecond)
		want(t, list(t, b), map[string]string{"alive": "y", "renewed": "z2"})
		// Beating again brings a name back.
		beat(t, b, "dead", "x2", longTTL)
		want(t, list(t, b), map[string]string{"alive": "y", "renewed": "z2", "dead": "x2"})
	})

	t.Run("a forgotten beat is gone at once, the others stay", func(t *testing.T) {
		b := newBeats(t)
		beat(t, b, "stopping", "x", longTTL)
		beat(t, b, "staying", "y", longTTL)
		for range 2 { // forgetting twice, or what is not there, is no error
			if err := b.Forget(ctx, "stopping"); err != nil {
				t.Fatalf("Forget: %v", err)
			}
		}
		if err := b.Forget(ctx, "never beat"); err != nil {
			t.Fatalf("Forget of an unknown name: %v", err)
		}
		want(t, list(t, b), map[string]string{"staying": "y"})
	})

	t.Run("all gone once every beat ran out", func(t *testing.T) {
		b := newBeats(t)
		beat(t, b, "a", "1", shortTTL)
		beat(t, b, "b", "2", shortTTL)
		time.Sleep(shortTTL + 200*time.Millisecond)
		want(t, list(t, b), map[string]string{})
	})
}
