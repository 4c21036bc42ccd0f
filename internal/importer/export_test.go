package importer_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/export"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/importer"
	"github.com/feedd/feedd/internal/jsonl"
	"github.com/feedd/feedd/internal/sqlstore"
)

// notCarried are the kinds of an export's lines that an import does not
// bring (a profile's counts follow from the follows, and its creation
// time completes its user).
var notCarried = []jsonl.Kind{jsonl.Marker, jsonl.Mute, jsonl.Block}

// carried returns an export's lines without those of notCarried.
func carried(doc string) string {
	var out []string
	for _, l := range strings.SplitAfter(doc, "\n") {
		k, _ := jsonl.Tagged([]byte(l))
		if l != "" && !containsKind(notCarried, k) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

func containsKind(ks []jsonl.Kind, k jsonl.Kind) bool {
	for _, c := range ks {
		if c == k {
			return true
		}
	}
	return false
}

// TestImportExport: the exports of every user of a store, imported as
// they are (--export) into a fresh store, give the same users, follows,
// posts (content, data, external id, time) and likes, and users created
// when they were: the fresh store's exports are the first ones but for
// the kinds an import does not carry, which the summary counts. Importing
// them again changes nothing.
func TestImportExport(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		const alice, bob, carol, dave = 10, 20, 30, 40
		at := time.Date(2024, 3, 4, 5, 6, 7, 891e6, time.UTC)
		for id, name := range map[int64]string{alice: `alice "<&>"`, bob: "bob", carol: "carol", dave: "dave"} {
			_, err := s.CreateUser(ctx, feed.User{ID: id, Name: name, CreatedAt: at})
			must(err)
		}
		for _, e := range [][2]int64{{alice, bob}, {alice, carol}, {bob, alice}, {carol, bob}, {dave, alice}} {
			_, err := s.Follow(ctx, e[0], e[1])
			must(err)
		}
		var posts []feed.Post
		post := func(author, n int64, ext, data string, weight ...float64) {
			created := at.Add(time.Duration(len(posts)+1) * time.Minute)
			id, err := feed.IDAt(created, n)
			must(err)
			p := feed.Post{ID: id, AuthorID: author, Content: "post " + feed.FormatID(id) + " <&>", CreatedAt: created, ExternalID: ext, Data: data}
			for _, w := range weight {
				p.Weight = feed.WeightOf(w)
			}
			_, _, err = s.CreatePost(ctx, p, feed.Idempotency{})
			must(err)
			posts = append(posts, p)
		}
		post(alice, 0, "", "")
		post(alice, 1, "blog-1", `{"title":"a & b","n":[1,2]}`)
		post(bob, 2, "", `{"x":true}`)
		post(bob, 3, "b-2", "", 2.5)
		post(carol, 4, "", "", 0)
		post(dave, 5, "", "")
		_, err := s.ApplyLikes(ctx, []feed.LikeEvent{
			{User: alice, Post: posts[2].ID, Liked: true, Version: 1},
			{User: alice, Post: posts[4].ID, Liked: true, Version: 2},
			{User: bob, Post: posts[1].ID, Liked: true, Version: 3},
			{User: carol, Post: posts[0].ID, Liked: true, Version: 4},
			{User: carol, Post: posts[5].ID, Liked: true, Version: 5}, // hidden by dave's block below
		})
		must(err)
		_, err = s.Mute(ctx, alice, carol)
		must(err)
		_, err = s.Block(ctx, dave, carol)
		must(err)
		_, err = s.SetMarker(ctx, alice, posts[2].ID, at)
		must(err)
		// A list of alice's, exclusive, of bob and carol: it keeps its id.
		_, err = s.CreateList(ctx, feed.List{ID: 77, OwnerID: alice, Name: "close <&>", Replies: feed.ListRepliesList, Exclusive: true})
		must(err)
		for _, m := range []int64{bob, carol} {
			_, err = s.AddListMember(ctx, alice, 77, m)
			must(err)
		}

		users := []int64{alice, bob, carol, dave}
		docs := map[int64]string{}
		defer func() {
			// The weights travel: absent for the default, there otherwise.
			if !strings.Contains(docs[bob], `"weight":2.5`) || !strings.Contains(docs[carol], `"weight":0`) || strings.Contains(docs[alice], `"weight"`) {
				t.Errorf("exports of bob, carol and alice:\n%s\n%s\n%s\nwant weights 2.5 and 0, and none of alice's", docs[bob], docs[carol], docs[alice])
			}
		}()
		var sources []importer.Source
		for _, u := range users {
			var b bytes.Buffer
			must(export.Write(ctx, s, u, &b))
			docs[u] = b.String()
			sources = append(sources, importer.Source{Kind: importer.Export, Name: feed.FormatID(u) + ".jsonl", R: strings.NewReader(b.String())})
		}

		fresh, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "fresh.db"))
		must(err)
		t.Cleanup(func() { fresh.Close() })
		must(fresh.Migrate(ctx))
		var bad strings.Builder
		sum, err := importer.Run(ctx, fresh, importer.Caches{}, importer.Options{Bad: &bad}, sources)
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, bad.String())
		}
		if c := sum.Counts[importer.Users]; c.Imported != 4 {
			t.Errorf("users %+v; want 4 imported", *c)
		}
		// Every follow is in both its users' exports: imported once.
		if c := sum.Counts[importer.Follows]; c.Read != 10 || c.Imported != 5 || c.Unchanged != 5 {
			t.Errorf("follows %+v; want 10 read, 5 imported, 5 unchanged", *c)
		}
		if c := sum.Counts[importer.Posts]; c.Imported != 6 {
			t.Errorf("posts %+v; want 6 imported", *c)
		}
		if c := sum.Counts[importer.Likes]; c.Imported != 4 {
			t.Errorf("likes %+v; want the 4 the exports hold", *c)
		}
		if c, m := sum.Counts[importer.Lists], sum.Counts[importer.ListMembers]; c.Imported != 1 || m.Imported != 2 {
			t.Errorf("lists %+v, members %+v; want alice's list and its 2 members", *c, *m)
		}
		want := map[jsonl.Kind]int64{jsonl.Marker: 1, jsonl.Mute: 1, jsonl.Block: 1}
		for k, n := range want {
			if sum.NotCarried[k] != n || len(sum.NotCarried) != len(want) {
				t.Errorf("not carried: %v; want %v", sum.NotCarried, want)
				break
			}
		}
		for _, u := range users {
			var b bytes.Buffer
			must(export.Write(ctx, fresh, u, &b))
			if got, want := carried(b.String()), carried(docs[u]); got != want {
				t.Errorf("user %d: export after the import\n%s\nwant\n%s", u, got, want)
			}
			// The counts follow from the follows.
			old, err := s.User(ctx, u)
			must(err)
			now, err := fresh.User(ctx, u)
			must(err)
			if now.FollowerCount != old.FollowerCount || now.FollowingCount != old.FollowingCount {
				t.Errorf("user %d: counts %d/%d; want %d/%d", u, now.FollowerCount, now.FollowingCount, old.FollowerCount, old.FollowingCount)
			}
		}

		// Again: nothing changes.
		for i, u := range users {
			sources[i].R = strings.NewReader(docs[u])
		}
		sum, err = importer.Run(ctx, fresh, importer.Caches{}, importer.Options{}, sources)
		must(err)
		for k, c := range sum.Counts {
			if c.Imported != 0 || c.Skipped != 0 {
				t.Errorf("again: %s %+v; want nothing imported nor skipped", k, *c)
			}
		}

		// A malformed line is reported once, not once a kind.
		var bad2 strings.Builder
		sum, err = importer.Run(ctx, fresh, importer.Caches{}, importer.Options{Bad: &bad2},
			[]importer.Source{{Kind: importer.Export, Name: "m", R: strings.NewReader(docs[alice] + "{\"kind\":\n")}})
		if !errors.Is(err, importer.ErrSkipped) || strings.Count(bad2.String(), "\n") != 1 || sum.Counts[importer.Users].Skipped != 1 {
			t.Errorf("Run(export with a malformed line): %v, reported %q; want it skipped and reported once", err, bad2.String())
		}

		// A line of a kind no feedd writes, or without a kind, stops
		// the run at it.
		for _, doc := range []string{`{"kind":"repost","id":"1"}` + "\n", `{"id":"1","name":"x"}` + "\n"} {
			_, err := importer.Run(ctx, fresh, importer.Caches{}, importer.Options{},
				[]importer.Source{{Kind: importer.Export, Name: "x", R: strings.NewReader(doc)}})
			var le *importer.LineError
			if !errors.As(err, &le) || le.Line != 1 {
				t.Errorf("Run(%s): %v; want the LineError of line 1", doc, err)
			}
		}
	})
}
