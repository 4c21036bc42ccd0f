package proctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestSIGTERMDrainsWork: a work process told to stop with SIGTERM in the
// middle of a fan-out finishes the messages in hand, hands the rest back
// and exits 0 within 20s; a new work process finishes the fan-out and no
// inbox misses a post or gets one twice.
func TestSIGTERMDrainsWork(t *testing.T) {
	t.Parallel()
	const followers = 20000
	s := newStack(t, mariaDB)
	env := s.with("FEEDD_BATCH_SIZE", "100", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	serve := startReady(t, "serve", env, "serve")
	work1 := startReady(t, "work 1", env, "work")
	api := serve.api()

	author, authorTok := api.newUser(s.admin, "celebrity")
	readers := s.followers(author, followers)
	p1 := api.publish(authorTok, "first of two")
	p2 := api.publish(authorTok, "second of two")
	want := []int64{p2, p1}

	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pg, err := s.cache.InboxPage(ctx, readers[0], 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(pg.IDs, p1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first post did not reach the first follower within 30s:%s", s.describeInboxes(readers[:1]))
		}
		time.Sleep(time.Millisecond)
	}
	work1.signal(syscall.SIGTERM)
	sent := time.Now()
	st := work1.wait(20 * time.Second)
	if st.ExitCode() != 0 {
		t.Fatalf("work 1 after SIGTERM: got %v; want exit status 0", st)
	}
	done := followers - len(s.mismatched(readers, want))
	if done == followers {
		t.Fatalf("when work 1 exited, %d of %d inboxes had both posts; want SIGTERM in the middle of the fan-out", done, followers)
	}
	t.Logf("work 1 exited 0, %v after SIGTERM, with %d of %d inboxes complete", time.Since(sent).Round(time.Millisecond), done, followers)

	startReady(t, "work 2", env, "work")
	s.waitInboxes(readers, want, 60*time.Second)
	s.requireNoDeadLetters()
}

// TestSIGTERMDrainsServe: a serve process told to stop with SIGTERM while
// 50 feed reads are in its handlers stops accepting connections, answers
// every one of the 50 with the full feed, and exits 0.
//
// The reads are held in flight by a table lock on posts: each rebuilds an
// absent inbox from SQL and waits for the lock, as a read waits for a slow
// database.
func TestSIGTERMDrainsServe(t *testing.T) {
	t.Parallel()
	const requests = 50
	s := newStack(t, mariaDB)
	serve := startReady(t, "serve", s.env, "serve")
	api := serve.api()
	author, authorTok := api.newUser(s.admin, "author")
	readers := s.followers(author, requests)
	p := api.publish(authorTok, "read me while I shut down")
	tokens := make([]string, requests)
	for i, r := range readers {
		tokens[i] = api.token(s.admin, r)
		// The inbox must be absent, so that the read goes to SQL.
		if err := s.cache.DropInbox(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}

	ctx := context.Background()
	lock, err := s.store.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "LOCK TABLES posts WRITE"); err != nil {
		t.Fatalf("lock posts: %v", err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
				t.Errorf("unlock tables: %v", err)
			}
		}
	}
	defer unlock()

	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make([]result, requests)
	var answered atomic.Int32
	var written, finished sync.WaitGroup
	// A connection per request, as 50 clients would have.
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range requests {
		written.Add(1)
		finished.Go(func() {
			var once sync.Once
			wrote := func() { once.Do(written.Done) }
			defer wrote()
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "GET", serve.url()+"/v1/me/feed", nil)
			req.Header.Set("Authorization", "Bearer "+tokens[i])
			res, err := hc.Do(req)
			answered.Add(1)
			if err != nil {
				results[i].err = err
				return
			}
			defer res.Body.Close()
			results[i].status = res.StatusCode
			results[i].body, results[i].err = io.ReadAll(res.Body)
		})
	}
	written.Wait()
	// The requests are on the wire; wait until the server runs them and
	// they queue on the lock.
	waitingOnLock := func() int {
		var n int
		err := s.store.DB().QueryRowContext(ctx,
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE LIKE 'Waiting for table%'").Scan(&n)
		if err != nil {
			t.Fatalf("list queries: %v", err)
		}
		return n
	}
	testenv.Eventually(t, 10*time.Second, "feed reads waiting for the table lock", func() bool { return waitingOnLock() > 0 })
	time.Sleep(300 * time.Millisecond)
	waiting := waitingOnLock()
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d of %d feed reads were answered while posts was locked; want all of them held in flight", n, requests)
	}

	serve.signal(syscall.SIGTERM)
	sent := time.Now()
	// Shutdown has begun once the listener is closed.
	testenv.Eventually(t, 10*time.Second, "serve stops accepting connections after SIGTERM", func() bool {
		c, err := net.DialTimeout("tcp", serve.addr, time.Second)
		if err != nil {
			return errors.Is(err, syscall.ECONNREFUSED)
		}
		c.Close()
		return false
	})
	select {
	case <-serve.exited:
		t.Fatalf("serve exited with %d requests in its handlers", requests)
	default:
	}
	unlock()
	finished.Wait()
	t.Logf("%d reads in flight (%d queries on the lock) at SIGTERM; all answered %v after it",
		requests, waiting, time.Since(sent).Round(time.Millisecond))

	for i, r := range results {
		if r.err != nil {
			t.Errorf("request %d: %v; want an answer", i, r.err)
			continue
		}
		if r.status != http.StatusOK {
			t.Errorf("request %d: got status %d; want 200; body %s", i, r.status, r.body)
			continue
		}
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != fmt.Sprint(p) {
			t.Errorf("request %d: got feed %s (%v); want the one post %d", i, r.body, err, p)
		}
	}
	if st := serve.wait(20 * time.Second); st.ExitCode() != 0 {
		t.Fatalf("serve after SIGTERM: got %v; want exit status 0", st)
	}
}
