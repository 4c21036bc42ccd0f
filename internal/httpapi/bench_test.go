package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
)

// pageService serves the same page of posts to every reader, with likes,
// so that a benchmark measures the API layer alone.
type pageService struct {
	Timeline
	Likes
	posts  []feed.Post
	states map[int64]feed.LikeState
}

func (s pageService) Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	return feed.PageOf(s.posts[:min(n, len(s.posts))], true), nil
}

// TokenGeneration: every reader exists, its tokens never revoked (what a
// busy user's check costs: one in-memory lookup, in timeline).
func (s pageService) TokenGeneration(ctx context.Context, user int64) (int64, error) { return 0, nil }

func (s pageService) CurrentTokenGeneration(ctx context.Context, user int64) (int64, error) {
	return 0, nil
}

func (s pageService) LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error) {
	return s.states, false, nil
}

// newPageService returns a pageService of 20 posts of 80 bytes.
func newPageService() pageService {
	svc := pageService{states: map[int64]feed.LikeState{}}
	ids := feed.NewIDGen(nil)
	for i := range 20 {
		id := ids.Next()
		svc.posts = append(svc.posts, feed.Post{ID: id, AuthorID: int64(1000 + i), Content: strings.Repeat("x", 80), CreatedAt: feed.IDTime(id)})
		svc.states[id] = feed.LikeState{Count: int64(i), LikedByMe: i%3 == 0}
	}
	return svc
}

// newPageServer is the API as `feedd serve` builds it (JSON request log at
// info, rate limits and in-flight bounds with their defaults, switches, a
// metrics registry) in front of svc.
func newPageServer(svc pageService) http.Handler {
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := prometheus.NewRegistry()
	cfg := Config{
		AdminToken: testAdmin,
		JWTSecret:  []byte(testSecret),
		Now:        func() time.Time { return testNow },
		Rates: limit.NewRates(limit.Config{
			PerUser: map[limit.Class]limit.Rule{limit.Write: {Rate: 20, Burst: 200}},
		}),
		Shed:     limit.NewShedder(map[limit.Class]int{limit.Read: 512, limit.Write: 128}, 100*time.Millisecond),
		Switches: degrade.New(logger, nil, reg),
	}
	return NewServer(logger, cfg, svc, svc, reg, nil)
}

// BenchmarkFeedPage is the API layer's cost of one feed page of 20 posts
// with likes: middleware (request id, log, histogram), the bearer token,
// the guard, the handler and the JSON body. The sub-benchmarks split it.
//
//	go test -run '^$' -bench BenchmarkFeedPage -benchmem -cpuprofile /tmp/api.pprof ./internal/httpapi/
func BenchmarkFeedPage(b *testing.B) {
	svc := newPageService()
	h := newPageServer(svc)
	tok := userToken(b, alice)
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest("GET", "/v1/me/feed?limit=20", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
	b.Run("token", func(b *testing.B) {
		tk := newTokens(Config{AdminToken: testAdmin, JWTSecret: []byte(testSecret), Now: func() time.Time { return testNow }}, svc)
		req := httptest.NewRequest("GET", "/v1/me/feed?limit=20", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		b.ReportAllocs()
		for b.Loop() {
			if p, err := tk.authenticate(req); err != nil || p.user != alice {
				b.Fatalf("authenticate = %v, %v", p, err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			encode(w, http.StatusOK, apijson.NewPostsPage(svc.posts, true, svc.states))
		}
	})
}
