package sqlstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// createExt creates post id by author with an external id under idem.
func createExt(t *testing.T, s *Store, id, author int64, ext string, idem feed.Idempotency) (feed.Post, bool, error) {
	t.Helper()
	return s.CreatePost(t.Context(), feed.Post{ID: id, AuthorID: author, Content: "post " + ext, CreatedAt: time.Now(), ExternalID: ext}, idem)
}

// wantExternalExists fails t unless err is EEXTERNALID naming post id.
func wantExternalExists(t *testing.T, err error, id int64) {
	t.Helper()
	wantCode(t, err, feed.EEXTERNALID)
	var xe *feed.ExternalIDExistsError
	if !errors.As(err, &xe) || xe.PostID != id {
		t.Fatalf("error %v: got %+v; want the existing post %d", err, xe, id)
	}
}

func testExternalID(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)

	if _, created, err := createExt(t, s, 10, 1, "blog-1", feed.Idempotency{}); err != nil || !created {
		t.Fatalf("CreatePost(10, blog-1): got created %v, %v; want true", created, err)
	}
	if p, err := s.Post(ctx, 10); err != nil || p.ExternalID != "blog-1" {
		t.Fatalf("Post(10): got %+v, %v; want external id blog-1", p, err)
	}
	if ps, err := s.AuthorPosts(ctx, 1, 0, 10); err != nil || len(ps) != 1 || ps[0].ExternalID != "blog-1" {
		t.Fatalf("AuthorPosts(1): got %+v, %v; want post 10 with its external id", ps, err)
	}

	// The same external id again by the same author: refused with the
	// post that has it, nothing written.
	_, created, err := createExt(t, s, 11, 1, "blog-1", feed.Idempotency{})
	wantExternalExists(t, err, 10)
	if created {
		t.Fatal("CreatePost with a used external id: got created true")
	}
	wantNoPost(t, s, 11)
	if n, err := s.OutboxBacklog(ctx); err != nil || n != 1 {
		t.Fatalf("OutboxBacklog: got %d, %v; want 1", n, err)
	}

	// External ids are per author and compared byte for byte; a post
	// without one never collides.
	long := strings.Repeat("é", feed.MaxExternalIDBytes/2) + "x" // 255 bytes
	for _, c := range []struct {
		id, author int64
		ext        string
	}{{12, 2, "blog-1"}, {13, 1, "Blog-1"}, {14, 1, "blog-1 "}, {15, 1, long}, {16, 1, ""}, {17, 1, ""}} {
		if _, created, err := createExt(t, s, c.id, c.author, c.ext, feed.Idempotency{}); err != nil || !created {
			t.Fatalf("CreatePost(%d, author %d, %q): got created %v, %v; want true", c.id, c.author, c.ext, created, err)
		}
	}
	if p, err := s.PostByExternalID(ctx, 1, long); err != nil || p.ID != 15 || p.ExternalID != long {
		t.Fatalf("PostByExternalID(1, 255 bytes): got %+v, %v; want post 15", p.ID, err)
	}
	if p, err := s.PostByExternalID(ctx, 2, "blog-1"); err != nil || p.ID != 12 {
		t.Fatalf("PostByExternalID(2, blog-1): got %d, %v; want 12", p.ID, err)
	}
	_, err = s.PostByExternalID(ctx, 2, "Blog-1")
	wantCode(t, err, feed.ENOTFOUND)

	// A taken id with a free external id is the id's conflict, for the
	// caller to retry with a fresh id.
	_, _, err = createExt(t, s, 10, 1, "fresh", feed.Idempotency{})
	wantCode(t, err, feed.ECONFLICT)
	_, err = s.PostByExternalID(ctx, 1, "fresh")
	wantCode(t, err, feed.ENOTFOUND)

	// With an idempotency key: its repeat is the first post; another key
	// with the same external id is refused.
	first, created, err := createExt(t, s, 20, 1, "e-20", idemKey("key-A", "e-20"))
	if err != nil || !created {
		t.Fatalf("CreatePost(20, key-A): got created %v, %v; want true", created, err)
	}
	again, created, err := createExt(t, s, 21, 1, "e-20", idemKey("key-A", "e-20"))
	if err != nil || created || again != first {
		t.Fatalf("CreatePost replay: got %+v, created %v, %v; want %+v, false", again, created, err, first)
	}
	_, _, err = createExt(t, s, 22, 1, "e-20", idemKey("key-B", "e-20"))
	wantExternalExists(t, err, 20)
	// The refused request's key was not kept: it is free for a new post.
	if _, created, err := createExt(t, s, 23, 1, "e-23", idemKey("key-B", "e-23")); err != nil || !created {
		t.Fatalf("CreatePost(23, key-B): got created %v, %v; want true", created, err)
	}

	// A deleted post keeps its external id taken, and is found by it as
	// a tombstone.
	if err := s.DeletePost(ctx, 20, 1); err != nil {
		t.Fatalf("DeletePost(20): %v", err)
	}
	if p, err := s.PostByExternalID(ctx, 1, "e-20"); err != nil || p.ID != 20 || !p.Deleted || p.Content != "" {
		t.Fatalf("PostByExternalID(1, e-20): got %+v, %v; want the tombstone of 20", p, err)
	}
	_, _, err = createExt(t, s, 24, 1, "e-20", feed.Idempotency{})
	wantExternalExists(t, err, 20)

	got, err := s.PostIDsByExternalID(ctx, []feed.ExternalKey{{AuthorID: 1, ExternalID: "blog-1"}, {AuthorID: 2, ExternalID: "blog-1"}, {AuthorID: 1, ExternalID: "e-20"}, {AuthorID: 1, ExternalID: "none"}, {AuthorID: 2, ExternalID: "e-20"}, {AuthorID: 1, ExternalID: long}})
	want := map[feed.ExternalKey]int64{{AuthorID: 1, ExternalID: "blog-1"}: 10, {AuthorID: 2, ExternalID: "blog-1"}: 12, {AuthorID: 1, ExternalID: "e-20"}: 20, {AuthorID: 1, ExternalID: long}: 15}
	if err != nil || len(got) != len(want) {
		t.Fatalf("PostIDsByExternalID: got %v, %v; want %v", got, err, want)
	}
	for k, id := range want {
		if got[k] != id {
			t.Errorf("PostIDsByExternalID[%v] = %d; want %d", k, got[k], id)
		}
	}
	// More keys than one query takes.
	keys := make([]feed.ExternalKey, 3*chunkSize)
	for i := range keys {
		keys[i] = feed.ExternalKey{AuthorID: 1, ExternalID: "none"}
	}
	keys[len(keys)-1] = feed.ExternalKey{AuthorID: 2, ExternalID: "blog-1"}
	if got, err := s.PostIDsByExternalID(ctx, keys); err != nil || len(got) != 1 || got[feed.ExternalKey{AuthorID: 2, ExternalID: "blog-1"}] != 12 {
		t.Fatalf("PostIDsByExternalID(%d keys): got %v, %v; want only post 12", len(keys), got, err)
	}
}

// testExternalIDRace: eight creates of one external id at once, each with
// its own post id. One post is made; every other create is told its id.
func testExternalIDRace(t *testing.T, e *env) {
	s := e.store(t)
	mustUsers(t, s, 1)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	made := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			_, made[i], errs[i] = s.CreatePost(t.Context(), feed.Post{
				ID: int64(100 + i), AuthorID: 1, Content: "race", CreatedAt: time.Now(), ExternalID: "same",
			}, feed.Idempotency{})
		})
	}
	wg.Wait()
	p, err := s.PostByExternalID(t.Context(), 1, "same")
	if err != nil {
		t.Fatalf("PostByExternalID: %v", err)
	}
	winners := 0
	for i := range n {
		if made[i] {
			winners++
			if p.ID != int64(100+i) {
				t.Errorf("create %d made a post, but the external id is post %d's", 100+i, p.ID)
			}
			continue
		}
		wantExternalExists(t, errs[i], p.ID)
	}
	if winners != 1 {
		t.Fatalf("%d creates made a post; want 1", winners)
	}
}

// testHistoryIDs: posts from before 2025 have negative ids; every read
// takes them in, below the posts of 2025 on, and pages across 0 exactly.
func testHistoryIDs(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3)
	mustFollow(t, s, 3, 1)
	mustFollow(t, s, 3, 2)
	at := func(ts time.Time, seq int64) int64 { return mustIDAt(t, ts, seq) }
	ids := []int64{ // newest first
		feed.NewIDGen(nil).Next(),
		at(feed.IDEpoch, 1),
		at(time.Date(2024, 12, 31, 23, 59, 59, 999e6, time.UTC), feed.MaxSeq),
		at(time.Date(2024, 12, 31, 23, 59, 59, 999e6, time.UTC), 0),
		at(time.Date(2016, 6, 1, 0, 0, 0, 0, time.UTC), 7),
		feed.MinID,
	}
	for i, id := range ids {
		author := int64(1 + i%2)
		p, created, err := s.CreatePost(ctx, feed.Post{ID: id, AuthorID: author, Content: "p", CreatedAt: feed.IDTime(id), ExternalID: fmt.Sprint("x", i)}, feed.Idempotency{})
		if err != nil || !created || !p.CreatedAt.Equal(feed.IDTime(id)) {
			t.Fatalf("CreatePost(%d): %+v, %v, %v", id, p, created, err)
		}
	}
	for _, bad := range []int64{0, feed.MinID - 1, feed.MaxID + 1} {
		_, _, err := s.CreatePost(ctx, feed.Post{ID: bad, AuthorID: 1, Content: "p"}, feed.Idempotency{})
		wantCode(t, err, feed.EINVALID)
	}
	of := func(author int64) []int64 {
		var out []int64
		for i, id := range ids {
			if int64(1+i%2) == author {
				out = append(out, id)
			}
		}
		return out
	}
	check := func(what string, got []int64, err error, want []int64) {
		t.Helper()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s = %v, %v; want %v", what, got, err, want)
		}
	}
	got, err := s.FeedPostIDs(ctx, 3, 0, 0, 100)
	check("FeedPostIDs(all)", got, err, ids)
	// Paging two at a time, each page below the last id of the one before.
	var paged []int64
	for before := int64(0); ; {
		page, err := s.FeedPostIDs(ctx, 3, 0, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if len(page) < 2 {
			break
		}
		before = page[len(page)-1]
	}
	check("FeedPostIDs paged by 2", paged, nil, ids)
	got, err = s.FeedPostIDs(ctx, 3, ids[4], ids[1], 100)
	check("FeedPostIDs(between)", got, err, ids[2:4])
	got, err = s.PushedFeedPostIDs(ctx, 3, 1000, 1000, 0, ids[2], 100)
	check("PushedFeedPostIDs(below)", got, err, ids[3:])
	got, err = s.AuthorPostIDs(ctx, 1, 0, 0, 100)
	check("AuthorPostIDs(1)", got, err, of(1))
	got, err = s.AuthorPostIDs(ctx, 2, 0, -1, 100)
	check("AuthorPostIDs(2, below -1)", got, err, of(2)[1:])
	got, err = s.AuthorsPostIDs(ctx, []int64{1, 2}, ids[3], 100)
	check("AuthorsPostIDs(below)", got, err, ids[4:])
	posts, err := s.AuthorPosts(ctx, 1, ids[1], 100)
	var pids []int64
	for _, p := range posts {
		pids = append(pids, p.ID)
	}
	check("AuthorPosts(1, below)", pids, err, of(1)[1:])
	if k, err := s.NewestPostsFloor(ctx, len(ids)); err != nil || k != feed.MinID {
		t.Errorf("NewestPostsFloor(%d) = %d, %v; want MinID", len(ids), k, err)
	}
	if byExt, err := s.PostIDsByExternalID(ctx, []feed.ExternalKey{{AuthorID: 1, ExternalID: "x4"}, {AuthorID: 2, ExternalID: "x5"}}); err != nil || byExt[feed.ExternalKey{AuthorID: 1, ExternalID: "x4"}] != ids[4] || byExt[feed.ExternalKey{AuthorID: 2, ExternalID: "x5"}] != feed.MinID {
		t.Errorf("PostIDsByExternalID = %v, %v", byExt, err)
	}
}

// testImportPosts: ImportPosts stores posts with the ids and external ids
// given, writes no outbox event, says which external ids and ids are
// taken, and a second run changes nothing.
func testImportPosts(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	live := mustPost(t, s, feed.NewIDGen(nil).Next(), 2) // one outbox event
	at := time.Date(2012, 3, 4, 5, 6, 7, 8e6, time.UTC)
	id := func(seq int64) int64 { return mustIDAt(t, at, seq) }
	post := func(author, id int64, ext string) feed.Post {
		return feed.Post{ID: id, AuthorID: author, Content: "c " + ext, Data: `{"e":"` + ext + `"}`, CreatedAt: at, ExternalID: ext}
	}
	posts := []feed.Post{
		post(1, id(1), "a"),
		post(1, id(2), "b"),
		post(1, id(3), "a"),   // the same external id again: the first's post
		post(2, id(2), "c"),   // the id of b
		post(2, live.ID, "d"), // the id of a live post
		post(2, id(4), "a"),   // another author's a
		post(1, feed.MinID, "z"),
	}
	got, err := s.ImportPosts(ctx, posts)
	want := []feed.ImportResult{{Outcome: feed.Imported, ExistingID: 0}, {Outcome: feed.Imported, ExistingID: 0}, {Outcome: feed.ExternalIDExists, ExistingID: id(1)}, {Outcome: feed.IDTaken, ExistingID: 0}, {Outcome: feed.IDTaken, ExistingID: 0}, {Outcome: feed.Imported, ExistingID: 0}, {Outcome: feed.Imported, ExistingID: 0}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ImportPosts = %v, %v; want %v", got, err, want)
	}
	if n, err := s.OutboxBacklog(ctx); err != nil || n != 1 {
		t.Fatalf("OutboxBacklog = %d, %v; want only the live post's event", n, err)
	}
	p, err := s.Post(ctx, id(2))
	if err != nil || p.AuthorID != 1 || p.Content != "c b" || p.Data != `{"e":"b"}` || p.ExternalID != "b" || !p.CreatedAt.Equal(at) {
		t.Fatalf("Post(%d) = %+v, %v; want b as imported", id(2), p, err)
	}
	// The refused ones retry with another id; a second run of everything
	// changes nothing.
	got, err = s.ImportPosts(ctx, []feed.Post{post(2, id(5), "c"), post(2, id(6), "d")})
	if err != nil || !slices.Equal(got, []feed.ImportResult{{Outcome: feed.Imported, ExistingID: 0}, {Outcome: feed.Imported, ExistingID: 0}}) {
		t.Fatalf("ImportPosts(retries) = %v, %v", got, err)
	}
	got, err = s.ImportPosts(ctx, posts)
	want = []feed.ImportResult{{Outcome: feed.ExternalIDExists, ExistingID: id(1)}, {Outcome: feed.ExternalIDExists, ExistingID: id(2)}, {Outcome: feed.ExternalIDExists, ExistingID: id(1)},
		{Outcome: feed.ExternalIDExists, ExistingID: id(5)}, {Outcome: feed.ExternalIDExists, ExistingID: id(6)}, {Outcome: feed.ExternalIDExists, ExistingID: id(4)}, {Outcome: feed.ExternalIDExists, ExistingID: feed.MinID}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ImportPosts again = %v, %v; want %v", got, err, want)
	}
	if ids, err := s.AuthorPostIDs(ctx, 1, 0, 0, 100); err != nil || !slices.Equal(ids, []int64{id(2), id(1), feed.MinID}) {
		t.Fatalf("AuthorPostIDs(1) = %v, %v", ids, err)
	}

	// Many posts: several transactions; again, all there.
	many := make([]feed.Post, 3*importChunk+7)
	for i := range many {
		ts := at.Add(time.Duration(i) * time.Second)
		ext := fmt.Sprint("m", i)
		many[i] = feed.Post{ID: mustIDAt(t, ts, feed.ImportSeq(1, ext, 0)), AuthorID: 1, Content: "m", CreatedAt: ts, ExternalID: ext}
	}
	for round, want := range []feed.ImportOutcome{feed.Imported, feed.ExternalIDExists} {
		got, err := s.ImportPosts(ctx, many)
		if err != nil || len(got) != len(many) {
			t.Fatalf("round %d: ImportPosts(%d) = %d results, %v", round, len(many), len(got), err)
		}
		for i, r := range got {
			if r.Outcome != want || (want == feed.ExternalIDExists && r.ExistingID != many[i].ID) {
				t.Fatalf("round %d: post %d: %+v; want outcome %d", round, i, r, want)
			}
		}
	}
	for _, bad := range []feed.Post{post(1, 0, "x"), post(1, feed.MinID-1, "x"), post(0, id(9), "x"), post(1, id(9), "")} {
		_, err := s.ImportPosts(ctx, []feed.Post{post(1, id(10), "fine"), bad})
		wantCode(t, err, feed.EINVALID)
	}
	_, err = s.PostByExternalID(ctx, 1, "fine")
	wantCode(t, err, feed.ENOTFOUND)
}

// testImportPostsRace: four imports of the same posts at once store each
// post once; every other import is told it exists.
func testImportPostsRace(t *testing.T, e *env) {
	s := e.store(t)
	mustUsers(t, s, 1)
	posts := make([]feed.Post, 300)
	at := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range posts {
		ext := fmt.Sprint("r", i)
		posts[i] = feed.Post{ID: mustIDAt(t, at.Add(time.Duration(i)*time.Millisecond), feed.ImportSeq(1, ext, 0)), AuthorID: 1, Content: "r", CreatedAt: at, ExternalID: ext}
	}
	const n = 4
	results := make([][]feed.ImportResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = s.ImportPosts(t.Context(), posts) })
	}
	wg.Wait()
	for i := range posts {
		imported := 0
		for g := range n {
			if errs[g] != nil {
				t.Fatalf("import %d: %v", g, errs[g])
			}
			switch r := results[g][i]; {
			case r.Outcome == feed.Imported:
				imported++
			case r.Outcome != feed.ExternalIDExists || r.ExistingID != posts[i].ID:
				t.Fatalf("import %d, post %d: %+v; want imported or exists as %d", g, i, r, posts[i].ID)
			}
		}
		if imported != 1 {
			t.Fatalf("post %d imported %d times; want once", i, imported)
		}
	}
}

// mustIDAt is feed.IDAt, failing t on an error.
func mustIDAt(t *testing.T, ts time.Time, seq int64) int64 {
	t.Helper()
	id, err := feed.IDAt(ts, seq)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
