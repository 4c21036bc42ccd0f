package clientsuite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// TestHandles: the handle routes through the client, on every stack.
func TestHandles(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()
		tag := fmt.Sprintf("c%x", time.Now().UnixNano()%(1<<40))
		u, err := s.admin.CreateUser(ctx, client.CreateUserParams{Name: "Hana " + tag, Handle: "Hana_" + tag})
		if err != nil || u.Handle != "hana_"+tag {
			t.Fatalf("CreateUser with handle Hana_%s = %+v, %v; want it folded to lower case", tag, u, err)
		}
		if _, err := s.admin.CreateUser(ctx, client.CreateUserParams{Name: "other", Handle: "HANA_" + tag}); !is(err, 409, client.CodeHandleTaken) {
			t.Fatalf("CreateUser with a taken handle in capitals: %v; want 409 handle_taken", err)
		}
		got, err := s.admin.UserByHandle(ctx, "HANA_"+tag)
		if err != nil || got.ID != u.ID || got.Handle != u.Handle {
			t.Fatalf("UserByHandle = %+v, %v; want %+v", got, err, u)
		}
		tok, err := s.admin.CreateToken(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hana := s.admin.WithToken(tok.Token)
		renamed := "h2_" + tag
		if me, err := hana.UpdateMe(ctx, client.UpdateUserParams{Handle: &renamed}); err != nil || me.Handle != renamed || me.Name != u.Name {
			t.Fatalf("UpdateMe to %s = %+v, %v", renamed, me, err)
		}
		if _, err := s.admin.UserByHandle(ctx, u.Handle); !is(err, 404, client.CodeNotFound) {
			t.Fatalf("UserByHandle of the old handle: %v; want 404", err)
		}
		other, asOther := s.user(t, "other "+tag)
		if o, err := s.admin.UpdateUser(ctx, other.ID, client.UpdateUserParams{Handle: &u.Handle}); err != nil || o.Handle != u.Handle {
			t.Fatalf("UpdateUser to the freed handle = %+v, %v", o, err)
		}
		if found, err := hana.SearchUsers(ctx, "@H2_"+tag, 0); err != nil || len(found) != 1 || found[0].ID != u.ID {
			t.Fatalf("SearchUsers by handle = %+v, %v; want %d", found, err, u.ID)
		}
		if found, err := hana.SearchUsers(ctx, "hana "+tag, 1); err != nil || len(found) != 1 || found[0].ID != u.ID {
			t.Fatalf("SearchUsers by name = %+v, %v; want %d", found, err, u.ID)
		}
		none := ""
		if o, err := asOther.UpdateMe(ctx, client.UpdateUserParams{Handle: &none}); err != nil || o.Handle != "" {
			t.Fatalf("UpdateMe removing the handle = %+v, %v", o, err)
		}
		if err := asOther.Follow(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		r, err := hana.Relationship(ctx, other.ID)
		if err != nil || r != (client.Relationship{FollowedBy: true}) {
			t.Fatalf("Relationship = %+v, %v; want followed_by only", r, err)
		}
		if r, err := asOther.Relationship(ctx, u.ID); err != nil || r != (client.Relationship{Following: true, Reposts: true}) {
			t.Fatalf("Relationship = %+v, %v; want following and reposts", r, err)
		}

		// Settings ride along: they are the token's user's.
		if st, err := hana.Settings(ctx); err != nil || st.HomeReplies != client.HomeRepliesFollowing {
			t.Fatalf("Settings, never set = %+v, %v; want home_replies following", st, err)
		}
		rule := client.HomeRepliesNone
		if st, err := hana.SetSettings(ctx, client.SettingsParams{HomeReplies: &rule}); err != nil || st.HomeReplies != rule {
			t.Fatalf("SetSettings none = %+v, %v", st, err)
		}
		if st, err := hana.Settings(ctx); err != nil || st.HomeReplies != rule {
			t.Fatalf("Settings after SetSettings = %+v, %v; want none", st, err)
		}
		if st, err := asOther.Settings(ctx); err != nil || st.HomeReplies != client.HomeRepliesFollowing {
			t.Fatalf("another user's Settings = %+v, %v; want its own default", st, err)
		}
		bad := "sometimes"
		if _, err := hana.SetSettings(ctx, client.SettingsParams{HomeReplies: &bad}); !is(err, 400, client.CodeInvalid) {
			t.Fatalf("SetSettings %q: %v; want 400 invalid", bad, err)
		}
	})
}
