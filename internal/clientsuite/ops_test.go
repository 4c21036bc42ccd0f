package clientsuite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// TestFollowBatchExportOverview covers the routes an app server and an
// operator use beside the user's own: the follow batch, a user's export,
// the ops console's overview and the requeue of dead letters, through the
// client against a real feedd on every stack.
func TestFollowBatchExportOverview(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()

		t.Run("follow batch", func(t *testing.T) {
			a, asA := s.user(t, "ann")
			b, asB := s.user(t, "ben")
			c, asC := s.user(t, "cat")
			if err := asC.Block(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			bensPost := post(t, asB, "ben's news")
			const nobody = client.ID(987654321)
			batch := client.FollowBatchParams{
				Follow: []client.Pair{
					{FollowerID: a.ID, FolloweeID: b.ID},
					{FollowerID: a.ID, FolloweeID: b.ID},
					{FollowerID: a.ID, FolloweeID: c.ID},
					{FollowerID: a.ID, FolloweeID: nobody},
					{FollowerID: c.ID, FolloweeID: b.ID},
				},
				Unfollow: []client.Pair{{FollowerID: b.ID, FolloweeID: a.ID}},
			}
			res, err := s.admin.FollowBatch(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{client.ResultCreated, client.ResultExists, client.ResultBlocked, client.ResultUnknownUser, client.ResultCreated}
			if got := results(res.Follow); !slices.Equal(got, want) {
				t.Fatalf("follow results = %v; want %v", got, want)
			}
			if got := results(res.Unfollow); !slices.Equal(got, []string{client.ResultAbsent}) {
				t.Fatalf("unfollow results = %v; want [absent]", got)
			}
			if res.Follow[3].FollowerID != a.ID || res.Follow[3].FolloweeID != nobody {
				t.Fatalf("result 3 names %+v; want the pair sent, ann → %d", res.Follow[3].Pair, nobody)
			}
			counts := func(u client.ID, followers, following int64) {
				t.Helper()
				got, err := s.admin.GetUser(ctx, u)
				if err != nil || got.FollowerCount != followers || got.FollowingCount != following {
					t.Fatalf("user %d = %+v, %v; want %d followers, %d following", u, got, err, followers, following)
				}
			}
			counts(a.ID, 0, 1)
			counts(b.ID, 2, 0)
			counts(c.ID, 0, 1)
			// Ann follows Ben: his posts reach her feed, as after a single follow.
			eventually(t, 10*time.Second, func() error {
				page, err := asA.FeedPage(ctx, client.PageParams{})
				if err != nil {
					return err
				}
				if ids := postIDs(page.Items); !slices.Equal(ids, []client.ID{bensPost.ID}) {
					return fmt.Errorf("ann's feed = %v; want ben's post %d", ids, bensPost.ID)
				}
				return nil
			})

			// A replay (what a retry sends) ends in the same state.
			res, err = s.admin.FollowBatch(ctx, batch)
			want = []string{client.ResultExists, client.ResultExists, client.ResultBlocked, client.ResultUnknownUser, client.ResultExists}
			if got := results(res.Follow); err != nil || !slices.Equal(got, want) {
				t.Fatalf("replayed follow results = %v, %v; want %v", got, err, want)
			}
			counts(b.ID, 2, 0)

			res, err = s.admin.FollowBatch(ctx, client.FollowBatchParams{Unfollow: []client.Pair{{FollowerID: a.ID, FolloweeID: b.ID}}})
			if got := results(res.Unfollow); err != nil || !slices.Equal(got, []string{client.ResultRemoved}) || len(res.Follow) != 0 {
				t.Fatalf("unfollow batch = %+v, %v; want [removed] and no follows", res, err)
			}
			counts(a.ID, 0, 0)
			counts(b.ID, 1, 0)

			// Refused whole: nothing changes.
			big := client.FollowBatchParams{Follow: []client.Pair{{FollowerID: a.ID, FolloweeID: b.ID}}}
			for i := range 1000 {
				big.Unfollow = append(big.Unfollow, client.Pair{FollowerID: a.ID, FolloweeID: client.ID(10_000 + i)})
			}
			if _, err := s.admin.FollowBatch(ctx, big); !is(err, 400, client.CodeBatchTooLarge) {
				t.Fatalf("1,001 pairs: %v; want 400 batch_too_large", err)
			}
			self := client.FollowBatchParams{Follow: []client.Pair{{FollowerID: a.ID, FolloweeID: b.ID}, {FollowerID: a.ID, FolloweeID: a.ID}}}
			if _, err := s.admin.FollowBatch(ctx, self); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("a self-follow: %v; want 400 invalid", err)
			}
			counts(a.ID, 0, 0)
			if _, err := asA.FollowBatch(ctx, client.FollowBatchParams{Follow: []client.Pair{{FollowerID: a.ID, FolloweeID: b.ID}}}); !is(err, 403, client.CodeForbidden) {
				t.Fatalf("a user's token: %v; want 403 forbidden", err)
			}
		})

		t.Run("export", func(t *testing.T) {
			ed, asEd := s.user(t, "ed")
			fay, asFay := s.user(t, "fay")
			gus, _ := s.user(t, "gus")
			hal, _ := s.user(t, "hal")
			for _, err := range []error{asEd.Follow(ctx, fay.ID), asFay.Follow(ctx, ed.ID), asEd.Mute(ctx, gus.ID), asEd.Block(ctx, hal.ID)} {
				if err != nil {
					t.Fatal(err)
				}
			}
			first := post(t, asEd, "first")
			withData, err := asEd.CreatePost(ctx, client.CreatePostParams{Content: "second", Data: json.RawMessage(`{"n":1}`)})
			if err != nil {
				t.Fatal(err)
			}
			faysPost := post(t, asFay, "fay's")
			if _, err := asEd.Like(ctx, faysPost.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := asEd.SetHomeMarker(ctx, faysPost.ID); err != nil {
				t.Fatal(err)
			}

			type postLine struct {
				AuthorID   client.ID       `json:"author_id"`
				ExternalID string          `json:"external_id"`
				Content    string          `json:"content"`
				Data       json.RawMessage `json:"data"`
			}
			var kinds []string
			var posts []postLine
			var follows []string
			// A like reaches SQL, and so the export, within the likes
			// writer's delay.
			eventually(t, 10*time.Second, func() error {
				kinds, posts, follows = nil, nil, nil
				for line, err := range asEd.ExportLines(ctx, ed.ID) {
					if err != nil {
						return err
					}
					kinds = append(kinds, line.Kind)
					switch line.Kind {
					case client.ExportPost:
						var p postLine
						if err := line.Decode(&p); err != nil {
							return err
						}
						posts = append(posts, p)
					case client.ExportFollow:
						var f struct {
							Follower client.ID `json:"follower_id"`
							Followee client.ID `json:"followee_id"`
						}
						if err := line.Decode(&f); err != nil {
							return err
						}
						follows = append(follows, fmt.Sprint(f.Follower, "→", f.Followee))
					}
				}
				if !slices.Contains(kinds, client.ExportLike) {
					return fmt.Errorf("export kinds %v: no like yet", kinds)
				}
				return nil
			})
			want := []string{client.ExportUser, client.ExportProfile, client.ExportMarker, client.ExportFollow, client.ExportFollow,
				client.ExportMute, client.ExportBlock, client.ExportPost, client.ExportPost, client.ExportLike}
			if !slices.Equal(kinds, want) {
				t.Fatalf("export kinds = %v; want %v", kinds, want)
			}
			if want := []string{fmt.Sprint(ed.ID, "→", fay.ID), fmt.Sprint(fay.ID, "→", ed.ID)}; !slices.Equal(follows, want) {
				t.Fatalf("follow lines = %v; want %v (whom ed follows, then who follows ed)", follows, want)
			}
			if posts[0].Content != "second" || posts[0].ExternalID != withData.ID.String() || string(posts[0].Data) != `{"n":1}` ||
				posts[1].Content != "first" || posts[1].ExternalID != first.ID.String() || posts[1].Data != nil || posts[1].AuthorID != ed.ID {
				t.Fatalf("post lines = %+v; want ed's two posts newest first, by feedd id, with their data", posts)
			}

			// The raw document: the same lines, as an app saves it.
			body, err := s.admin.Export(ctx, ed.ID)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(body)
			body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"); len(lines) != len(want) || !strings.Contains(lines[0], `"kind":"user"`) {
				t.Fatalf("the admin's export = %q; want %d lines, the user's first", raw, len(want))
			}

			if _, err := asFay.Export(ctx, ed.ID); !is(err, 403, client.CodeForbidden) {
				t.Fatalf("another user's export: %v; want 403 forbidden", err)
			}
			var lineErr error
			for _, err := range s.admin.ExportLines(ctx, 123456789) {
				lineErr = err
			}
			if !is(lineErr, 404, client.CodeNotFound) {
				t.Fatalf("the export of nobody yields %v; want 404 not_found", lineErr)
			}
		})

		t.Run("overview and requeue", func(t *testing.T) {
			o, err := s.admin.Overview(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Processes) != 1 || o.Processes[0].Role != "all" || o.Processes[0].ID == "" || o.Processes[0].StartedAt.IsZero() {
				t.Fatalf("overview processes = %+v; want this one feedd, role all", o.Processes)
			}
			if o.At.IsZero() || o.HeartbeatSeconds <= 0 || o.Degradation.Level != 0 || len(o.Problems) != 0 {
				t.Fatalf("overview = %+v; want a time, a heartbeat, level 0 and no problems", o)
			}
			var names []string
			for _, q := range o.Queues {
				names = append(names, q.Name)
				if q.DeadLetters == nil || *q.DeadLetters != 0 {
					t.Fatalf("queue %s: dead letters %v; want 0", q.Name, q.DeadLetters)
				}
			}
			if !slices.Equal(names, []string{client.QueuePosts, client.QueueTasks, client.QueueLikes}) {
				t.Fatalf("overview queues = %v; want posts, tasks, likes", names)
			}

			// A rate over a window that still grows (the process is younger
			// than a minute) can fall as posts come: count the posts instead.
			published := func(o client.Overview) int {
				return int(math.Round(o.Publish.PerSecond * o.WindowSeconds))
			}
			before := published(o)
			_, asIvy := s.user(t, "ivy")
			for i := range 5 {
				post(t, asIvy, fmt.Sprint("ivy ", i))
			}
			eventually(t, 10*time.Second, func() error {
				o, err := s.admin.Overview(ctx)
				if err != nil {
					return err
				}
				if n := published(o); n < before+5 || o.Publish.P50Ms == nil || o.Publish.P99Ms == nil || o.Processes[0].Publish.PerSecond <= 0 {
					return fmt.Errorf("publish = %+v over %vs (%d posts), the process's %+v; want %d posts more than %d, with latencies",
						o.Publish, o.WindowSeconds, n, o.Processes[0].Publish, 5, before)
				}
				return nil
			})

			for _, q := range []string{"", client.QueuePosts, client.QueueTasks, client.QueueLikes} {
				got, err := s.admin.RequeueDeadLetters(ctx, q)
				if err != nil || got != (client.Requeued{}) {
					t.Fatalf("RequeueDeadLetters(%q) = %+v, %v; want zeros: there are no dead letters", q, got, err)
				}
			}
			if _, err := s.admin.RequeueDeadLetters(ctx, "inbox"); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("requeue of an unknown queue: %v; want 400 invalid", err)
			}
			_, err = asIvy.Overview(ctx)
			var e *client.Error
			if !errors.As(err, &e) || e.Status != 403 {
				t.Fatalf("a user's overview: %v; want 403", err)
			}
			if _, err := asIvy.RequeueDeadLetters(ctx, ""); !is(err, 403, client.CodeForbidden) {
				t.Fatalf("a user's requeue: %v; want 403 forbidden", err)
			}
		})
	}, "FEEDD_HEARTBEAT", "100ms")
}

func results(rs []client.PairResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Result
	}
	return out
}
