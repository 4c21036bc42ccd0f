package load

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeFloor: the floor answers every path with the same bytes, with
// a Content-Length (as feedd's pages have), and stops when its context
// ends.
func TestServeFloor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := []byte(`{"items":[{"id":"1"}],"next_cursor":null}` + "\n")
	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- ServeFloor(ctx, "127.0.0.1:0", body, pw) }()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q does not say where it listens", line)
	}
	for _, path := range []string{"/v1/me/feed?limit=20", "/readyz"} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || string(got) != string(body) || res.ContentLength != int64(len(body)) {
			t.Errorf("GET %s: %d, %d bytes announced, body %q; want 200 and the body with its length", path, res.StatusCode, res.ContentLength, got)
		}
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeFloor after cancel: %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeFloor did not return after its context ended")
	}
}
