package main

import (
	"testing"
	"time"
)

// TestStreamEndsWithItsTokenAcrossProcesses: a stream on one serve process
// ends, with a retry: hint and before any later post, once its token is
// revoked or its user deleted on another process (the deletion's purge
// may not have removed the follows yet), whether it was opened with the
// token or with a ticket; the reconnect is refused with 401. The
// heartbeat is a minute: the change is announced, and the streams end
// within moments, not at their next heartbeat.
func TestStreamEndsWithItsTokenAcrossProcesses(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		heartbeat := []string{"FEEDD_STREAM_HEARTBEAT", "1m"}
		var api, streams *instance
		if env["FEEDD_REDIS_URL"] == "" {
			api = startFeedd(t, env, nil, heartbeat...)
			streams = api
		} else {
			api = startRole(t, "serve", env, nil, heartbeat...)
			startRole(t, "work", env, nil)
			streams = startRole(t, "serve", env, nil, heartbeat...)
		}
		author, authorTok := api.user("author")
		revoked, revokedTok := api.user("revoked")
		_, deletedTok := api.user("deleted")
		api.follow(revokedTok, author)
		api.follow(deletedTok, author)

		tk := api.must(201, "POST", "/v1/me/feed/stream-tickets", revokedTok, nil)
		byTicket := streams.openStream("/v1/me/feed/stream?ticket="+tk.str("ticket"), "")
		byToken := streams.openStream("/v1/me/feed/stream", revokedTok)
		ofDeleted := streams.openStream("/v1/me/feed/stream", deletedTok)

		api.must(204, "DELETE", "/v1/users/"+revoked+"/tokens", api.admin, nil)
		api.must(202, "DELETE", "/v1/me", deletedTok, nil)
		// Every process sees the change within a second; the streams,
		// told of it, check again after recheckAfter.
		time.Sleep(3 * time.Second)
		p := api.post(authorTok, "after the end")
		for name, s := range map[string]*sseStream{"ticket": byTicket, "token": byToken, "deleted user": ofDeleted} {
			if ev := s.event(10 * time.Second); ev.Retry == "" {
				t.Fatalf("%s: the stream sent %q after its token's end (post %s); want a retry: hint", name, ev.Raw, p)
			}
			if !s.Ended(5 * time.Second) {
				t.Fatalf("%s: the stream goes on after its retry hint", name)
			}
		}
		for _, tok := range []string{revokedTok, deletedTok} {
			if s, res := streams.tryStream("/v1/me/feed/stream", tok); res.StatusCode != 401 {
				if s != nil {
					s.Close()
				}
				t.Fatalf("reconnect after the token's end: %d; want 401", res.StatusCode)
			}
		}
	})
}
