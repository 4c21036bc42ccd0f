package export

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// stores opens a fresh, migrated store of each backend: SQLite, and
// MariaDB (skipped loudly on a laptop without it, failed under CI=true).
func stores(t *testing.T) map[string]func(t *testing.T) *sqlstore.Store {
	open := func(t *testing.T, s *sqlstore.Store, err error) *sqlstore.Store {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	return map[string]func(t *testing.T) *sqlstore.Store{
		"sqlite": func(t *testing.T) *sqlstore.Store {
			s, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "feedd.db"))
			return open(t, s, err)
		},
		"mysql": func(t *testing.T) *sqlstore.Store {
			feedtest.RequireServices(t, "127.0.0.1:3306")
			s, err := sqlstore.OpenMySQL(t.Context(), testenv.CreateDatabase(t, "feedd_export_"))
			return open(t, s, err)
		},
	}
}

// TestWrite exports a user who has one of everything, and things that
// are not theirs to see (who blocks or mutes them), on both backends and
// with pages of 2 rows as well as the default, and checks the document
// line for line.
func TestWrite(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			at := time.Date(2026, 3, 4, 5, 6, 7, 891e6, time.UTC)
			user := func(id int64, name string) {
				_, err := s.CreateUser(ctx, feed.User{ID: id, Name: name, CreatedAt: at})
				must(err)
			}
			const alice, bob, carol, dave, eve, frank = 10, 20, 30, 40, 50, 60
			user(alice, `alice "<&>"`)
			for id, name := range map[int64]string{bob: "bob", carol: "carol", dave: "dave", eve: "eve", frank: "frank"} {
				user(id, name)
			}
			var fans []feed.User
			for id := int64(101); id <= 105; id++ {
				fans = append(fans, feed.User{ID: id, Name: "fan"})
			}
			must(s.BulkCreateUsers(ctx, fans))
			must(s.BulkFollow(ctx, alice, []int64{101, 102, 103, 104, 105, bob}))
			for _, followee := range []int64{bob, carol} {
				_, err := s.Follow(ctx, alice, followee)
				must(err)
			}
			_, err := s.Mute(ctx, alice, dave)
			must(err)
			_, err = s.Block(ctx, alice, eve)
			must(err)
			// Others' mutes and blocks of alice are theirs, not hers.
			_, err = s.Block(ctx, frank, alice)
			must(err)
			_, err = s.Mute(ctx, carol, alice)
			must(err)

			post := func(id, author int64, ext, data string) {
				t.Helper()
				_, _, err := s.CreatePost(ctx, feed.Post{ID: id, AuthorID: author, Content: "post <" + feed.FormatID(id) + ">",
					CreatedAt: at.Add(time.Duration(id) * time.Second), ExternalID: ext, Data: data}, feed.Idempotency{})
				must(err)
			}
			post(1000, alice, "", "")
			post(1001, alice, "blog-1", `{"title":"a & b","n":[1,2]}`)
			post(1002, alice, "", "")
			post(1003, alice, "", "")
			post(1004, alice, "", "")
			must(s.DeletePost(ctx, 1003, alice))
			post(2000, bob, "b-9", "")
			post(2001, bob, "", "")
			post(2002, bob, "", "")
			post(2003, bob, "", "")
			must(s.DeletePost(ctx, 2003, bob))
			_, err = s.ApplyLikes(ctx, []feed.LikeEvent{
				{User: alice, Post: 2000, Liked: true, Version: 1},
				{User: alice, Post: 2001, Liked: true, Version: 2},
				{User: alice, Post: 1001, Liked: true, Version: 3},
				{User: alice, Post: 2002, Liked: false, Version: 4}, // unliked
				{User: alice, Post: 2003, Liked: true, Version: 5},  // its post is deleted
				{User: bob, Post: 1000, Liked: true, Version: 6},    // bob's like
			})
			must(err)
			_, err = s.SetMarker(ctx, alice, 2001, at)
			must(err)

			want := strings.Join([]string{
				`{"kind":"user","id":"10","name":"alice \"<&>\""}`,
				`{"kind":"profile","user_id":"10","created_at":"2026-03-04T05:06:07.891Z","follower_count":6,"following_count":2}`,
				`{"kind":"marker","user_id":"10","timeline":"home","last_read_id":"2001","updated_at":"2026-03-04T05:06:07.891Z"}`,
				`{"kind":"follow","follower_id":"10","followee_id":"20"}`,
				`{"kind":"follow","follower_id":"10","followee_id":"30"}`,
				`{"kind":"follow","follower_id":"20","followee_id":"10"}`,
				`{"kind":"follow","follower_id":"101","followee_id":"10"}`,
				`{"kind":"follow","follower_id":"102","followee_id":"10"}`,
				`{"kind":"follow","follower_id":"103","followee_id":"10"}`,
				`{"kind":"follow","follower_id":"104","followee_id":"10"}`,
				`{"kind":"follow","follower_id":"105","followee_id":"10"}`,
				`{"kind":"mute","user_id":"10","target_id":"40"}`,
				`{"kind":"block","blocker_id":"10","blocked_id":"50"}`,
				`{"kind":"post","author_id":"10","external_id":"1004","content":"post <1004>","created_at":"2026-03-04T05:22:51.891Z"}`,
				`{"kind":"post","author_id":"10","external_id":"1002","content":"post <1002>","created_at":"2026-03-04T05:22:49.891Z"}`,
				`{"kind":"post","author_id":"10","external_id":"blog-1","content":"post <1001>","created_at":"2026-03-04T05:22:48.891Z","data":{"title":"a & b","n":[1,2]}}`,
				`{"kind":"post","author_id":"10","external_id":"1000","content":"post <1000>","created_at":"2026-03-04T05:22:47.891Z"}`,
				`{"kind":"like","user_id":"10","author_id":"10","external_id":"blog-1"}`,
				`{"kind":"like","user_id":"10","author_id":"20","external_id":"b-9"}`,
				`{"kind":"like","user_id":"10","author_id":"20","external_id":"2001"}`,
			}, "\n") + "\n"
			for _, page := range []int{2, pageSize} {
				var b bytes.Buffer
				if err := write(ctx, s, alice, &b, page); err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				if got := b.String(); got != want {
					t.Fatalf("page %d: export\n%s\nwant\n%s", page, got, want)
				}
			}

			// A user with nothing: their user and profile lines only.
			var b bytes.Buffer
			must(Write(ctx, s, frank, &b))
			if got, want := strings.Count(b.String(), "\n"), 3; got != want { // user, profile, their block
				t.Fatalf("frank's export has %d lines; want %d:\n%s", got, want, b.String())
			}
			// Unknown and deleted users: ENOTFOUND, nothing written.
			_, _, err = s.DeleteUser(ctx, dave)
			must(err)
			for _, id := range []int64{999, dave} {
				var b bytes.Buffer
				if err := Write(ctx, s, id, &b); feed.ErrorCode(err) != feed.ENOTFOUND || b.Len() != 0 {
					t.Fatalf("export of %d: %v, %d bytes written; want not_found and nothing", id, err, b.Len())
				}
			}
		})
	}
}

// failing is a Source whose likes cannot be read.
type failing struct{ Source }

func (failing) LikedPosts(context.Context, int64, int64, int) ([]feed.Post, error) {
	return nil, feed.Errorf(feed.EUNAVAILABLE, "the database is not answering")
}

// TestWriteFails: an error part-way is returned, after the lines read
// before it.
func TestWriteFails(t *testing.T) {
	s := stores(t)["sqlite"](t)
	if _, err := s.CreateUser(t.Context(), feed.User{ID: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err := Write(t.Context(), failing{s}, 1, &b)
	if feed.ErrorCode(err) != feed.EUNAVAILABLE || !strings.HasPrefix(b.String(), `{"kind":"user"`) {
		t.Fatalf("got %v after %q; want unavailable after the user line", err, b.String())
	}
}

// TestWriteHidesBlockedLikes: the likes of posts whose author is on the
// other side of a block, either way, are left out, as the API's lists of
// likes leave them out; the others stay, from before 2025 too.
func TestWriteHidesBlockedLikes(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			const alice, bob, carol, dave = 1, 2, 3, 4
			for id, name := range map[int64]string{alice: "alice", bob: "bob", carol: "carol", dave: "dave"} {
				_, err := s.CreateUser(ctx, feed.User{ID: id, Name: name})
				must(err)
			}
			// Posts from before 2025, whose ids are negative, as history
			// brought by an import is: their likes are exported too.
			at := time.Date(2019, 3, 4, 5, 6, 7, 0, time.UTC)
			ids := map[int64]int64{}
			for _, author := range []int64{bob, carol, dave} {
				id, err := feed.IDAt(at.Add(time.Duration(author)*time.Second), 0)
				must(err)
				ids[author] = id
				_, _, err = s.CreatePost(ctx, feed.Post{ID: id, AuthorID: author, Content: "hi", CreatedAt: at}, feed.Idempotency{})
				must(err)
				_, err = s.ApplyLikes(ctx, []feed.LikeEvent{{User: alice, Post: id, Liked: true, Version: author}})
				must(err)
			}
			_, err := s.Block(ctx, bob, alice) // bob blocks alice
			must(err)
			_, err = s.Block(ctx, alice, carol) // alice blocks carol
			must(err)
			var b bytes.Buffer
			must(Write(ctx, s, alice, &b))
			var likes []string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, `{"kind":"like"`) {
					likes = append(likes, l)
				}
			}
			want := []string{`{"kind":"like","user_id":"1","author_id":"4","external_id":"` + feed.FormatID(ids[dave]) + `"}`}
			if strings.Join(likes, "\n") != strings.Join(want, "\n") {
				t.Fatalf("likes in the export:\n%s\nwant only dave's:\n%s", strings.Join(likes, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
