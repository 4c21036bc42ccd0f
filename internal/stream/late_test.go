package stream

import "testing"

// A post announced late, older than a post the stream already sent with
// an id: line, goes out without one: the client's Last-Event-ID stays at
// the newest post it has, so a resume neither sends again the posts sent
// since nor skips newer ones.
func TestLatePostKeepsLastEventID(t *testing.T) {
	s := &Stream{}
	s.Resumed(100)
	for _, c := range []struct {
		id   int64
		want bool
	}{{90, false}, {120, true}, {110, false}, {130, true}} {
		if got := s.idLine(c.id); got != c.want {
			t.Errorf("after Last-Event-ID %d, post %d has an id: line: %v; want %v", s.lastID, c.id, got, c.want)
		}
	}
	if s.lastID != 130 {
		t.Errorf("Last-Event-ID %d; want 130, the newest post sent", s.lastID)
	}
	rendered := []byte("event: post\nid: 110\ndata: {\"id\":\"110\"}\n\n")
	if got, want := string(withoutID(rendered)), "event: post\ndata: {\"id\":\"110\"}\n\n"; got != want {
		t.Errorf("withoutID = %q; want %q", got, want)
	}
	if string(rendered) != "event: post\nid: 110\ndata: {\"id\":\"110\"}\n\n" {
		t.Errorf("withoutID changed the shared rendering to %q", rendered)
	}
}
