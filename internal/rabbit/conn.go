package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// errClosed is returned once Close has been called.
var errClosed = errors.New("broker closed")

const (
	// connectTimeout bounds the TCP connect and the AMQP handshake when the
	// caller's ctx has no earlier deadline: a silent server must not hang a
	// reconnect forever.
	connectTimeout = 10 * time.Second
	// closeTimeout bounds the wait for the broker to acknowledge a close.
	// On a connection that died silently the wait would otherwise last
	// until heartbeats notice (three intervals, 30s by default).
	closeTimeout = 5 * time.Second
)

// closeChannel closes ch, giving up waiting after closeTimeout; amqp091
// finishes the close on its own when the connection ends.
func closeChannel(ch *amqp.Channel) {
	done := make(chan struct{})
	go func() {
		ch.Close() // an error means it is closed already
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeTimeout):
	}
}

// session is one AMQP connection and what is only true while it lives.
type session struct {
	conn *amqp.Connection
	// raw is the TCP connection under conn; tests close it to simulate a
	// network failure.
	raw net.Conn
	// declared holds the queue names whose topology was declared on this
	// connection. It starts empty on every new connection so that a broker
	// that lost its definitions (a fresh node) gets them declared again.
	declared sync.Map
	// blocked is set while the broker has blocked publishers (a memory or
	// disk alarm): a publish would hang on TCP back-pressure, so it fails
	// fast instead.
	blocked atomic.Bool
}

// link owns one lazily (re)dialed connection. The broker keeps two: one for
// publishing and one for consuming, because RabbitMQ throttles a
// publishing connection as a whole and consumers must keep acking while it
// does.
type link struct {
	// urls are the nodes of a cluster (or one server); a dial tries them
	// in turn from the last one that worked.
	urls   []string
	next   int    // guarded by lock
	name   string // connection_name shown by rabbitmqctl and the management UI
	logger *slog.Logger

	cur atomic.Pointer[session]
	// lock serialises dialing; a channel rather than a mutex so that a
	// caller waiting for someone else's dial can give up with its ctx.
	lock   chan struct{}
	closed bool // guarded by lock
}

func newLink(urls []string, name string, logger *slog.Logger) *link {
	return &link{urls: urls, name: name, logger: logger.With("conn", name), lock: make(chan struct{}, 1)}
}

// session returns the live connection, dialing a new one if there is none
// or the last one died.
func (l *link) session(ctx context.Context) (*session, error) {
	if s := l.cur.Load(); s != nil && !s.conn.IsClosed() {
		return s, nil
	}
	select {
	case l.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.lock }()
	if l.closed {
		return nil, errClosed
	}
	// Someone else may have redialed while we waited.
	if s := l.cur.Load(); s != nil && !s.conn.IsClosed() {
		return s, nil
	}
	// Every node in turn, from the one that worked last: after a node
	// dies, its clients move to the next one.
	var errs []error
	for i := range l.urls {
		n := (l.next + i) % len(l.urls)
		s, err := l.dial(ctx, l.urls[n])
		if err == nil {
			if n != l.next && len(errs) > 0 {
				l.logger.Warn("connected to another node", "node", n+1, "of", len(l.urls))
			}
			l.next = n
			l.cur.Store(s)
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("%d nodes: %w", len(errs), errors.Join(errs...))
}

func (l *link) dial(ctx context.Context, url string) (*session, error) {
	s := &session{}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(l.name)
	cfg := amqp.Config{
		Properties: props,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: connectTimeout}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// The deadline covers the AMQP handshake; amqp091 clears it
			// once the connection is open and heartbeats take over.
			deadline := time.Now().Add(connectTimeout)
			if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
				deadline = d
			}
			if err := c.SetDeadline(deadline); err != nil {
				c.Close()
				return nil, err
			}
			s.raw = c
			return c, nil
		},
	}
	conn, err := amqp.DialConfig(url, cfg)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	closes := conn.NotifyClose(make(chan *amqp.Error, 1))
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 1))
	// The watcher lives exactly as long as the connection: amqp091 closes
	// both notification channels when it shuts down.
	go l.watch(s, closes, blocks)
	l.logger.Debug("connected")
	return s, nil
}

func (l *link) watch(s *session, closes <-chan *amqp.Error, blocks <-chan amqp.Blocking) {
	for {
		select {
		case err, ok := <-closes:
			if ok && err != nil {
				l.logger.Warn("connection lost; the next call reconnects", "err", err)
			}
			return
		case b, ok := <-blocks:
			if !ok {
				blocks = nil
				continue
			}
			s.blocked.Store(b.Active)
			if b.Active {
				l.logger.Warn("broker blocked publishers", "reason", b.Reason)
			} else {
				l.logger.Info("broker unblocked publishers")
			}
		}
	}
}

// close closes the current connection and refuses to dial again. It waits
// for a dial in progress to finish, so that no connection outlives it.
func (l *link) close() error {
	l.lock <- struct{}{}
	defer func() { <-l.lock }()
	l.closed = true
	s := l.cur.Load()
	if s == nil || s.conn.IsClosed() {
		return nil
	}
	if err := s.conn.CloseDeadline(time.Now().Add(closeTimeout)); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return err
	}
	return nil
}
