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
func runRequeueDead(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newCommandFlags("feedd requeue-dead", getenv, stderr)
	fs := f.fs
	queue := fs.String("queue", "all", "the queue whose dead letters to move: posts, tasks, likes, or all")
	limit := fs.Int("max", 0, "move at most this many messages per queue (0: all)")
	// The broker settings are the roles' own: same flags, same
	// environment variables, a flag winning.
	var url, prefix, queueType string
	f.str(&url, "amqp-url", "", true, "RabbitMQ URL of the deployment, e.g. amqp://guest:guest@127.0.0.1:5672/")
	f.str(&prefix, "amqp-prefix", defaultAMQPPrefix, true, "prefix of the deployment's queues")
	f.str(&queueType, "amqp-queue-type", defaultAMQPQueueType, true, "quorum or classic, as the deployment's")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: feedd requeue-dead [flags]

Moves the messages in the dead-letter queues (<prefix><queue>.dead) back onto
their queues with their attempts reset, once the cause of their failures is
fixed; the work processes then handle them. A run moves at most what a
dead-letter queue held when it started, so a message that fails again waits
for the next run.

flags:
`)
		fs.PrintDefaults()
	}
	if err := f.parse(args); err != nil {
		return err
	}
	var queues []string
	switch *queue {
	case "all":
		queues = []string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes}
	case feed.QueuePosts, feed.QueueTasks, feed.QueueLikes:
		queues = []string{*queue}
	default:
		return usageError{fmt.Errorf("requeue-dead: -queue %q: want posts, tasks, likes or all", *queue)}
	}
	if *limit < 0 {
		return usageError{fmt.Errorf("requeue-dead: -max %d: want 0 (all) or a positive count", *limit)}
	}
	if err := checkAMQPQueueType(queueType); err != nil {
		return usageError{fmt.Errorf("requeue-dead: %w", err)}
	}
	if url == "" {
		return errors.New("requeue-dead: FEEDD_AMQP_URL is not set: without RabbitMQ, feedd's queue is the embedded one inside the running feedd process, which this command cannot reach (its dead letters are lost when that process stops); set FEEDD_AMQP_URL and FEEDD_AMQP_PREFIX to the deployment's")
	}

	logger := newLogger(stderr, getenv("FEEDD_LOG_LEVEL"), getenv("FEEDD_LOG_FORMAT"))
	b, err := rabbit.Dial(ctx, url, rabbit.Options{Prefix: prefix, QueueType: queueType}, logger)
	if err != nil {
		return fmt.Errorf("requeue-dead: %w", err)
	}
	defer b.Close()
	for _, q := range queues {
		moved, err := b.Requeue(ctx, q, *limit)
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
