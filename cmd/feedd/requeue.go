package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/rabbit"
)

// runRequeueDead is `feedd requeue-dead`: once the cause of dead letters
// is fixed (an outage longer than the retries), it moves them back onto
// their queues with fresh attempts, for the running work processes to
// handle. It is a command of its own, like bench, rather than a role: it
// has flags no role has and needs nothing but RabbitMQ.
func runRequeueDead(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	var queue string
	var limit int
	var cfg config
	f := newFlagSet("feedd requeue-dead", getenv, stderr, `usage: feedd requeue-dead [flags]

Moves the messages in the dead-letter queues (<prefix><queue>.dead) back onto
their queues with their attempts reset, once the cause of their failures is
fixed; the work processes then handle them. A run moves at most what a
dead-letter queue held when it started, so a message that fails again waits
for the next run.
`)
	f.own("queue", "the queue whose dead letters to move: posts, tasks, likes, or all",
		bind(textKind, &queue, "all", oneOf(feed.QueuePosts, feed.QueueTasks, feed.QueueLikes, "all")))
	f.own("max", "move at most this many messages per queue (0: all)", bind(intKind, &limit, 0, notNegative))
	// The broker settings are the roles' own.
	f.settings(&cfg, "amqp-url", "amqp-prefix", "amqp-queue-type", "log-level", "log-format")
	if err := f.parse(args); err != nil {
		return err
	}
	queues := []string{queue}
	if queue == "all" {
		queues = []string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes}
	}
	url, prefix := cfg.amqpURL, cfg.amqpPrefix
	if url == "" {
		return errors.New("requeue-dead: FEEDD_AMQP_URL is not set: without RabbitMQ, feedd's queue is the embedded one inside the running feedd process, which this command cannot reach (its dead letters are lost when that process stops); set FEEDD_AMQP_URL and FEEDD_AMQP_PREFIX to the deployment's")
	}

	logger := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	b, err := rabbit.Dial(ctx, url, rabbit.Options{Prefix: prefix, QueueType: cfg.amqpQueue}, logger)
	if err != nil {
		return fmt.Errorf("requeue-dead: %w", err)
	}
	defer b.Close()
	for _, q := range queues {
		moved, err := b.Requeue(ctx, q, limit)
		if err != nil {
			fmt.Fprintf(stdout, "%s: moved %d back to %s%s, then failed\n", q, moved, prefix, q)
			return fmt.Errorf("requeue-dead: %w", err)
		}
		left, err := b.DeadLetters(ctx, q)
		if err != nil {
			return fmt.Errorf("requeue-dead: %w", err)
		}
		fmt.Fprintf(stdout, "%s: moved %d back to %s%s, %d left in %s%s.dead\n", q, moved, prefix, q, left, prefix, q)
	}
	return nil
}
