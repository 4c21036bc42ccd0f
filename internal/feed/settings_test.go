package feed

import "testing"

func TestHomeRepliesRule(t *testing.T) {
	const reader, alice, bob, carol = 1, 2, 3, 4
	follows := func(u int64) bool { return u == alice || u == bob }
	post := Post{ID: 10, AuthorID: alice}
	reply := func(author, to int64) Post {
		return Post{ID: 11, AuthorID: author, InReplyToID: 9, InReplyToAuthorID: to}
	}
	cases := []struct {
		name                 string
		p                    Post
		following, all, none bool
	}{
		{"a post that is no reply", post, true, true, true},
		{"a thread: alice answers herself", reply(alice, alice), true, true, true},
		{"alice answers the reader", reply(alice, reader), true, true, false},
		{"alice answers bob, whom the reader follows", reply(alice, bob), true, true, false},
		{"alice answers carol, a stranger", reply(alice, carol), false, true, false},
		{"the reader's own reply to a stranger", reply(reader, carol), true, true, true},
	}
	for _, c := range cases {
		for rule, want := range map[HomeReplies]bool{RepliesFollowing: c.following, RepliesAll: c.all, RepliesNone: c.none} {
			if got := rule.Shows(reader, c.p, follows); got != want {
				t.Errorf("%s, rule %s: Shows = %v, want %v", c.name, rule, got, want)
			}
			asks := rule.NeedsFollows(reader, c.p) != 0
			if wantAsk := rule == RepliesFollowing && c.name == "alice answers bob, whom the reader follows" ||
				rule == RepliesFollowing && c.name == "alice answers carol, a stranger"; asks != wantAsk {
				t.Errorf("%s, rule %s: NeedsFollows asks = %v, want %v", c.name, rule, asks, wantAsk)
			}
		}
	}
}

func TestParseHomeReplies(t *testing.T) {
	for _, r := range []HomeReplies{RepliesFollowing, RepliesAll, RepliesNone} {
		got, err := ParseHomeReplies(r.String())
		if err != nil || got != r {
			t.Errorf("ParseHomeReplies(%q) = %v, %v", r.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Following", "some", "1"} {
		if _, err := ParseHomeReplies(bad); ErrorCode(err) != EINVALID {
			t.Errorf("ParseHomeReplies(%q): %v, want %s", bad, err, EINVALID)
		}
	}
}

func TestHiddenCarriesTheReplyRule(t *testing.T) {
	for _, h := range []Hidden{
		NewHidden([]int64{5}, nil).WithReplies(RepliesNone),
		NewHidden(nil, []int64{7}).WithExcluded([]int64{9}).WithReplies(RepliesAll),
		NewHidden(nil, nil),
	} {
		got, ok := DecodeHidden(h.Encode())
		if !ok || got.Replies() != h.Replies() || got.Encode() != h.Encode() {
			t.Errorf("DecodeHidden(%q) = %q, %v; want the rule %s back", h.Encode(), got.Encode(), ok, h.Replies())
		}
	}
	// The default rule adds nothing: a process of the version before
	// decodes the sets of the readers who never chose.
	if enc := NewHidden([]int64{5}, nil).Encode(); enc != "m5;b" {
		t.Errorf("Encode of a default rule = %q, want %q", enc, "m5;b")
	}
	for _, bad := range []string{"m;b;r9", "m;b;rx", "m;b;q1"} {
		if _, ok := DecodeHidden(bad); ok {
			t.Errorf("DecodeHidden(%q) accepted it", bad)
		}
	}
}

func TestListReplyRule(t *testing.T) {
	const owner, alice, bob, carol, dave = 1, 2, 3, 4, 5
	follows := func(u int64) bool { return u == carol } // the owner follows carol
	reply := func(author, to int64) Post {
		return Post{ID: 9, AuthorID: author, InReplyToID: 8, InReplyToAuthorID: to}
	}
	cases := []struct {
		name                 string
		p                    Post
		followed, list, none bool
	}{
		{"no reply", Post{ID: 9, AuthorID: alice}, true, true, true},
		{"a thread", reply(alice, alice), true, true, true},
		{"to the owner", reply(alice, owner), true, true, true},
		{"the owner's own, to a stranger", reply(owner, dave), true, true, true},
		{"to a member", reply(alice, bob), true, true, false},
		{"to someone the owner follows", reply(alice, carol), true, false, false},
		{"to a stranger", reply(alice, dave), false, false, false},
	}
	for _, c := range cases {
		for policy, want := range map[string]bool{ListRepliesFollowed: c.followed, ListRepliesList: c.list, ListRepliesNone: c.none, "": c.followed} {
			r := NewListReplyRule(policy, []int64{alice, bob})
			if got := r.Shows(owner, c.p, follows); got != want {
				t.Errorf("%s, policy %q: Shows = %v, want %v", c.name, policy, got, want)
			}
			if asks := r.NeedsFollows(owner, c.p) != 0; asks && policy != ListRepliesFollowed && policy != "" {
				t.Errorf("%s, policy %q: NeedsFollows asks; only followed asks", c.name, policy)
			}
		}
	}
}
