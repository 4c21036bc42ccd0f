package sqlstore

import (
	"slices"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// testHandles: a handle is one user's; a rename frees the old one in the
// same statement; the searches are ranges in order, after a position; an
// import leaves out a user whose handle another holds; a purge frees it.
func testHandles(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	for _, u := range []feed.User{{ID: 1, Name: "Ann", Handle: "ann"}, {ID: 2, Name: "anna b", Handle: "an_b"}, {ID: 3, Name: "ANDY"}, {ID: 4, Name: "Zoë", Handle: "zoe"}} {
		if _, err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateUser(ctx, feed.User{ID: 5, Name: "x", Handle: "ann"}); feed.ErrorCode(err) != feed.EHANDLETAKEN {
		t.Fatalf("a taken handle: %v; want handle_taken", err)
	}
	if _, err := s.CreateUser(ctx, feed.User{ID: 1, Name: "x", Handle: "fresh"}); feed.ErrorCode(err) != feed.ECONFLICT {
		t.Fatalf("a taken id: %v; want conflict", err)
	}
	if u, err := s.UserByHandle(ctx, "ann"); err != nil || u.ID != 1 || u.Handle != "ann" {
		t.Fatalf("UserByHandle(ann) = %+v, %v", u, err)
	}
	ids := func(us []feed.User, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, u := range us {
			out = append(out, u.ID)
		}
		return out
	}
	if got := ids(s.SearchHandles(ctx, "an", "", 10)); !slices.Equal(got, []int64{2, 1}) {
		t.Fatalf("SearchHandles(an) = %v; want an_b, ann", got)
	}
	if got := ids(s.SearchHandles(ctx, "an", "an_b", 10)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("SearchHandles(an) after an_b = %v; want ann", got)
	}
	if got := ids(s.SearchNames(ctx, "an", "", 0, 2)); !slices.Equal(got, []int64{3, 1}) {
		t.Fatalf("SearchNames(an, 2) = %v; want andy, ann", got)
	}
	if got := ids(s.SearchNames(ctx, "an", "ann", 1, 10)); !slices.Equal(got, []int64{2}) {
		t.Fatalf("SearchNames(an) after ann = %v; want anna b", got)
	}
	if got := ids(s.SearchNames(ctx, "zoë", "", 0, 10)); !slices.Equal(got, []int64{4}) {
		t.Fatalf("SearchNames(zoë) = %v; want Zoë", got)
	}

	h := "zed"
	if _, err := s.UpdateUser(ctx, 4, feed.UserEdit{Handle: &h}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, feed.User{ID: 6, Name: "new zoe", Handle: "zoe"}); err != nil {
		t.Fatalf("the handle a rename freed: %v", err)
	}
	taken := "ann"
	if _, err := s.UpdateUser(ctx, 4, feed.UserEdit{Handle: &taken}); feed.ErrorCode(err) != feed.EHANDLETAKEN {
		t.Fatalf("rename to a taken handle: %v", err)
	}
	none, name := "", "Zed"
	if u, err := s.UpdateUser(ctx, 4, feed.UserEdit{Handle: &none, Name: &name}); err != nil || u.Handle != "" || u.Name != "Zed" {
		t.Fatalf("remove the handle, rename: %+v, %v", u, err)
	}
	if got := ids(s.SearchNames(ctx, "ze", "", 0, 10)); !slices.Equal(got, []int64{4}) {
		t.Fatalf("SearchNames(ze) after the rename = %v", got)
	}

	out, err := s.ImportUsers(ctx, []feed.User{{ID: 7, Name: "i", Handle: "ann"}, {ID: 8, Name: "j", Handle: "imp"}, {ID: 9, Name: "k", Handle: "imp"}, {ID: 1, Name: "Ann", Handle: "ann"}})
	if err != nil || !slices.Equal(out, []feed.ImportOutcome{feed.HandleInUse, feed.Imported, feed.HandleInUse, feed.Unchanged}) {
		t.Fatalf("ImportUsers = %v, %v", out, err)
	}
	if u, err := s.UserByHandle(ctx, "imp"); err != nil || u.ID != 8 {
		t.Fatalf("an imported handle: %+v, %v", u, err)
	}
}
