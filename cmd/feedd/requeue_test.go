package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rabbit"
	"github.com/feedd/feedd/internal/testenv"
)

// TestRequeueDead runs `feedd requeue-dead` against the real RabbitMQ, on
// both queue types: it moves what -queue and -max say, prints how many it
// moved and how many are left per queue, and the moved messages reach a
// consumer once each, as first attempts.
func TestRequeueDead(t *testing.T) {
	for _, typ := range []string{"quorum", "classic"} {
		t.Run(typ, func(t *testing.T) {
			ctx := t.Context()
			url, prefix := testenv.AMQPURL(), "rq"+testenv.RandHex(4)+"."
			b, err := rabbit.Dial(ctx, url, rabbit.Options{Prefix: prefix, QueueType: typ}, nil)
			if err != nil {
				feedtest.Missing(t, "no RabbitMQ at %s (%v): start one or set FEEDD_TEST_AMQP_URL", url, err)
			}
			// Cleanups run last-in first-out: the broker closes, then
			// the queues go.
			t.Cleanup(func() { testenv.DeleteQueues(t, url, prefix) })
			t.Cleanup(func() { b.Close() })
			seedDeadLetters(t, b, url, prefix, map[string]int{feed.QueuePosts: 3, feed.QueueTasks: 1, feed.QueueLikes: 0})

			env := map[string]string{"FEEDD_AMQP_URL": url, "FEEDD_AMQP_PREFIX": prefix, "FEEDD_AMQP_QUEUE_TYPE": typ}
			requeueDead := func(args ...string) string {
				t.Helper()
				var stdout, stderr bytes.Buffer
				err := run(ctx, append([]string{"requeue-dead"}, args...), func(k string) string { return env[k] }, nil, &stdout, &stderr)
				if err != nil {
					t.Fatalf("requeue-dead %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
				}
				return stdout.String()
			}
			line := func(q string, moved, left int) string {
				return fmt.Sprintf("%s: moved %d back to %s%s, %d left in %s%s.dead\n", q, moved, prefix, q, left, prefix, q)
			}

			if got, want := requeueDead("-queue", "posts", "-max", "2"), line("posts", 2, 1); got != want {
				t.Errorf("requeue-dead -queue posts -max 2 printed\n%s; want\n%s", got, want)
			}
			if n, err := b.DeadLetters(ctx, feed.QueueTasks); err != nil || n != 1 {
				t.Errorf("tasks dead letters after requeueing posts = %d, %v; want 1", n, err)
			}
			want := line("posts", 1, 0) + line("tasks", 1, 0) + line("likes", 0, 0)
			if got := requeueDead(); got != want {
				t.Errorf("requeue-dead printed\n%s; want\n%s", got, want)
			}

			// Each dead letter is back once, and starts its attempts anew.
			var mu sync.Mutex
			got := map[string][]int{}
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- b.Consume(cctx, feed.QueuePosts, feed.ConsumeOptions{}, func(_ context.Context, d feed.Delivery) error {
					mu.Lock()
					defer mu.Unlock()
					got[string(d.Body)] = append(got[string(d.Body)], d.Attempt)
					return nil
				})
			}()
			deadline := time.Now().Add(15 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n == 3 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // a duplicate would show now
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Consume: %v", err)
			}
			for i := range 3 {
				body := fmt.Sprintf("posts-%d", i)
				if !slices.Equal(got[body], []int{1}) {
					t.Errorf("%s delivered with attempts %v; want [1]", body, got[body])
				}
			}
			if n, err := b.Pending(ctx, feed.QueueTasks); err != nil || n != 1 {
				t.Errorf("tasks pending = %d, %v; want the 1 requeued", n, err)
			}
		})
	}
}

// seedDeadLetters puts n messages ("<queue>-<i>") into each queue's
// dead-letter queue through the dead-letter exchange, as RabbitMQ does
// with a message out of attempts.
func seedDeadLetters(t *testing.T, b *rabbit.Broker, url, prefix string, n map[string]int) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for q, count := range n {
		// Declares the deployment's topology, as a feedd process would.
		if _, err := b.DeadLetters(t.Context(), q); err != nil {
			t.Fatal(err)
		}
		for i := range count {
			dc, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), prefix+"dlx", prefix+q+".dead", true, false,
				amqp.Publishing{DeliveryMode: amqp.Persistent, Body: fmt.Appendf(nil, "%s-%d", q, i)})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := dc.WaitContext(t.Context()); err != nil || !ok {
				t.Fatalf("seed a dead letter of %s: confirmed %v, %v", q, ok, err)
			}
		}
	}
}

// TestRequeueDeadUsage: bad flags and a missing RabbitMQ fail with a
// message that says what to do, before any connection.
func TestRequeueDeadUsage(t *testing.T) {
	withURL := map[string]string{"FEEDD_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/"}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "FEEDD_AMQP_URL is not set: without RabbitMQ, feedd's queue is the embedded one inside the running feedd process"},
		{[]string{"-queue", "bogus"}, withURL, `-queue "bogus": want posts, tasks, likes or all`},
		{[]string{"-max", "-1"}, withURL, `-max "-1": want 0 or more`},
		{[]string{"-max", "x"}, withURL, `-max "x": want an integer`},
		{[]string{"-nope"}, withURL, "flag provided but not defined: -nope"},
		{[]string{"posts"}, withURL, `unexpected argument "posts"`},
		{nil, map[string]string{"FEEDD_AMQP_URL": "amqp://x/", "FEEDD_AMQP_QUEUE_TYPE": "stream"}, `FEEDD_AMQP_QUEUE_TYPE="stream": want quorum or classic`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"requeue-dead"}, tc.args...), func(k string) string { return tc.env[k] }, nil, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want one containing %q", err, tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("printed %q; want nothing", stdout.String())
			}
		})
	}
}
