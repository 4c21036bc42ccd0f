package sqlstore

import (
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// testListMemberLimit: a list takes feed.MaxListMembers members and
// refuses the next with ELIMIT, changing nothing; a member already in is
// no new member at the limit; a member removed makes room again. The
// first 4,999 go in as rows, in bulk: through AddListMember one at a time
// they took minutes under the race detector.
func testListMemberLimit(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	const owner = 1
	mustUsers(t, s, owner)
	l, err := s.CreateList(ctx, feed.List{ID: 10, OwnerID: owner, Name: "everyone", Replies: feed.ListRepliesFollowed})
	if err != nil {
		t.Fatal(err)
	}
	const rows = 500
	for from := int64(1); from < feed.MaxListMembers; from += rows {
		var vals []string
		var args []any
		for m := from; m < min(from+rows, feed.MaxListMembers); m++ {
			vals = append(vals, "(?, ?, ?, ?)")
			args = append(args, owner, l.ID, 1000+m, 1)
		}
		if _, err := s.db.ExecContext(ctx, "INSERT INTO list_members (owner_id, list_id, member_id, created_at) VALUES "+strings.Join(vals, ", "), args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE lists SET member_count = ? WHERE owner_id = ? AND id = ?", feed.MaxListMembers-1, owner, l.ID); err != nil {
		t.Fatal(err)
	}
	if added, err := s.AddListMember(ctx, owner, l.ID, 2); err != nil || !added {
		t.Fatalf("member 5,000: added %v, %v; want added", added, err)
	}
	if _, err := s.AddListMember(ctx, owner, l.ID, 3); feed.ErrorCode(err) != feed.ELIMIT {
		t.Fatalf("member 5,001: %v; want %s", err, feed.ELIMIT)
	}
	if added, err := s.AddListMember(ctx, owner, l.ID, 1001); err != nil || added {
		t.Fatalf("a member again at the limit: added %v, %v; want no change, no error", added, err)
	}
	got, err := s.List(ctx, owner, l.ID)
	if err != nil || got.MemberCount != feed.MaxListMembers {
		t.Fatalf("member_count = %d, %v; want %d", got.MemberCount, err, feed.MaxListMembers)
	}
	if ms, err := s.ListMembers(ctx, owner, l.ID, 0, feed.MaxListMembers+1); err != nil || len(ms) != feed.MaxListMembers {
		t.Fatalf("ListMembers = %d members, %v; want %d", len(ms), err, feed.MaxListMembers)
	}
	if removed, err := s.RemoveListMember(ctx, owner, l.ID, 1002); err != nil || !removed {
		t.Fatalf("RemoveListMember = %v, %v", removed, err)
	}
	if added, err := s.AddListMember(ctx, owner, l.ID, 3); err != nil || !added {
		t.Fatalf("a member after one left: added %v, %v", added, err)
	}
}
