package feed

import (
	"context"
	"testing"
)

// TestMessagesJSON pins the wire format of every message: ids and
// versions travel as strings, so that no consumer in another language
// rounds them, and each decodes back to what was encoded.
func TestMessagesJSON(t *testing.T) {
	ctx := WithRequestID(context.Background(), "r1")
	ev := PostCreated(ctx, 1<<53+1, 7)
	task := FanoutTask{ID: "9:0", PostID: 9, AuthorID: 7, After: 0, Upto: 1 << 53, RequestID: "r1", Last: true}
	like := LikeEvent{User: 1<<53 - 1, Post: 7, Liked: true, Version: 1_763_800_000_000_001}
	for _, tc := range []struct {
		name string
		got  []byte
		want string
		back func([]byte) (any, error)
		orig any
	}{
		{"event", ev.Encode(), `{"kind":"post.created","post_id":"9007199254740993","author_id":"7","request_id":"r1"}`,
			func(b []byte) (any, error) { return DecodeEvent(b) }, ev},
		{"task", task.Encode(), `{"id":"9:0","post_id":"9","author_id":"7","after":"0","upto":"9007199254740992","request_id":"r1","last":true}`,
			func(b []byte) (any, error) { return DecodeFanoutTask(b) }, task},
		{"like", like.Encode(), `{"u":"9007199254740991","p":"7","l":true,"v":"1763800000000001"}`,
			func(b []byte) (any, error) { return DecodeLikeEvent(b) }, like},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s json = %s; want %s", tc.name, tc.got, tc.want)
		}
		if back, err := tc.back(tc.got); err != nil || back != tc.orig {
			t.Errorf("%s round trip = %+v, %v; want %+v", tc.name, back, err, tc.orig)
		}
	}
}

// TestDecodeOldTask: tasks once carried "score" (the post id again). A
// task of that shape still in a queue when feedd is upgraded decodes.
func TestDecodeOldTask(t *testing.T) {
	old := `{"id":"9:0","post_id":"9","author_id":"7","after":"0","upto":"1000","score":"9","last":true}`
	got, err := DecodeFanoutTask([]byte(old))
	want := FanoutTask{ID: "9:0", PostID: 9, AuthorID: 7, After: 0, Upto: 1000, Last: true}
	if err != nil || got != want {
		t.Errorf("DecodeFanoutTask(%s) = %+v, %v; want %+v", old, got, err, want)
	}
}

// TestDecodeMalformed: a message no consumer can act on is an error.
func TestDecodeMalformed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decode func([]byte) error
		bodies []string
	}{
		{"event", func(b []byte) error { _, err := DecodeEvent(b); return err }, []string{
			`not json`, `{}`, `{"kind":"post.created","post_id":"9"}`, `{"kind":"post.created","post_id":"0","author_id":"7"}`,
			`{"kind":"post.created","post_id":"-2456027136000001","author_id":"7"}`, `{"post_id":9,"author_id":7}`,
		}},
		{"task", func(b []byte) error { _, err := DecodeFanoutTask(b); return err }, []string{
			`not json`, `{}`, `{"post_id":"9","author_id":"7","after":"5","upto":"5"}`, `{"post_id":"9","after":"0","upto":"5"}`,
		}},
		{"like", func(b []byte) error { _, err := DecodeLikeEvent(b); return err }, []string{
			`not json`, `{}`, `{"u":"1","p":"7","l":true}`, `{"u":"0","p":"7","l":true,"v":"1"}`, `{"u":"1","p":"0","l":true,"v":"1"}`,
		}},
	} {
		for _, b := range tc.bodies {
			if err := tc.decode([]byte(b)); err == nil {
				t.Errorf("decode %s %s = nil; want an error", tc.name, b)
			}
		}
	}
	// A post from before 2025 has a negative id: its like is well formed.
	if ev, err := DecodeLikeEvent([]byte(`{"u":"1","p":"-4096","l":true,"v":"1"}`)); err != nil || ev.Post != -4096 {
		t.Errorf("the like of a post from 2024 = %+v, %v; want it decoded", ev, err)
	}
	// An unknown kind is well formed: the consumer decides what to do.
	if ev, err := DecodeEvent([]byte(`{"kind":"post.deleted","post_id":"9","author_id":"7"}`)); err != nil || ev.Kind != "post.deleted" {
		t.Errorf("an event of another kind = %+v, %v; want it decoded", ev, err)
	}
}
