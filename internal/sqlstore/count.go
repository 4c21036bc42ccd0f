package sqlstore

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Statement counting: every statement a MySQL or PostgreSQL pool sends is counted by
// pool (primary, replica) and verb (select, insert, update, delete,
// begin, commit, rollback…), so that the cost of an API call in SQL
// statements is measured, not guessed (docs/capacity.md), and an operator
// sees where the load goes (feedd_sql_statements_total). The count is one
// atomic add on a statement that costs a network round trip.

// StatementCount is one (pool, verb) pair and how many statements it
// counted.
type StatementCount struct {
	Pool, Verb string
	N          int64
}

// JobStatementCount is one (pool, job, verb) triple and how many
// statements a background job sent.
type JobStatementCount struct {
	Pool, Job, Verb string
	N               int64
}

// A statement sent with a context from forJob is counted by job too: the
// statements a process sends on its own, apart from its requests', so
// that the cost of an API call can be measured exactly on a process that
// also runs background work (the stale-feed sweep of every API process).
type jobKey struct{}

func forJob(ctx context.Context, job string) context.Context {
	return context.WithValue(ctx, jobKey{}, job)
}

// counter counts statements by verb for one pool, and those of background
// jobs by job and verb.
type counter struct {
	pool string
	// rebind: the pool is PostgreSQL's, whose statements are rewritten
	// to $n placeholders as they pass (postgres.go).
	rebind bool
	verbs  sync.Map // verb -> *atomic.Int64
	jobs   sync.Map // jobVerb -> *atomic.Int64
}

type jobVerb struct{ job, verb string }

func (c *counter) add(ctx context.Context, verb string) {
	inc(&c.verbs, verb)
	if job, _ := ctx.Value(jobKey{}).(string); job != "" {
		inc(&c.jobs, jobVerb{job, verb})
	}
}

func inc(m *sync.Map, k any) {
	v, ok := m.Load(k)
	if !ok {
		v, _ = m.LoadOrStore(k, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// rewrite returns query as the pool's driver takes it.
func (c *counter) rewrite(query string) string {
	if c.rebind {
		return rebind(query)
	}
	return query
}

// verbOf returns the lower-cased first word of a statement.
func verbOf(query string) string {
	q := strings.TrimLeft(query, " \t\r\n(")
	end := strings.IndexAny(q, " \t\r\n(")
	if end < 0 {
		end = len(q)
	}
	return strings.ToLower(q[:end])
}

// Statements returns what the store's MySQL pools sent so far; nil on
// SQLite, which has no network round trips to count.
func (s *Store) Statements() []StatementCount {
	var out []StatementCount
	for _, c := range s.counters {
		c.verbs.Range(func(k, v any) bool {
			out = append(out, StatementCount{Pool: c.pool, Verb: k.(string), N: v.(*atomic.Int64).Load()})
			return true
		})
	}
	return out
}

// JobStatements returns what the store's background jobs sent so far on
// its MySQL pools (a part of Statements); nil on SQLite.
func (s *Store) JobStatements() []JobStatementCount {
	var out []JobStatementCount
	for _, c := range s.counters {
		c.jobs.Range(func(k, v any) bool {
			jv := k.(jobVerb)
			out = append(out, JobStatementCount{Pool: c.pool, Job: jv.job, Verb: jv.verb, N: v.(*atomic.Int64).Load()})
			return true
		})
	}
	return out
}

// countingConnector wraps a driver.Connector so that its connections count
// what they send.
type countingConnector struct {
	driver.Connector
	c *counter
}

// Close closes the wrapped connector if it has anything to close (a
// cluster's failback loop); sql.DB.Close calls it.
func (cc countingConnector) Close() error {
	if c, ok := cc.Connector.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (cc countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cc.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: cc.c}, nil
}

// countingConn is a go-sql-driver/mysql or pgx connection that counts.
// database/sql sends every statement through QueryContext or ExecContext
// (MySQL's with interpolateParams, which OpenMySQL sets; pgx's always);
// Prepare is counted too for completeness.
type countingConn struct {
	driver.Conn
	c *counter
}

var (
	_ driver.QueryerContext     = (*countingConn)(nil)
	_ driver.ExecerContext      = (*countingConn)(nil)
	_ driver.ConnBeginTx        = (*countingConn)(nil)
	_ driver.Pinger             = (*countingConn)(nil)
	_ driver.SessionResetter    = (*countingConn)(nil)
	_ driver.Validator          = (*countingConn)(nil)
	_ driver.ConnPrepareContext = (*countingConn)(nil)
)

// pgx returns the pgx connection under a PostgreSQL countingConn, for what
// database/sql cannot say (COPY), and counts the statement as verb; it
// fails on another driver's connection.
func (c *countingConn) pgx(ctx context.Context, verb string) (*pgx.Conn, error) {
	sc, ok := c.Conn.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("a %T connection, not pgx's", c.Conn)
	}
	c.c.add(ctx, verb)
	return sc.Conn(), nil
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.c.add(ctx, verbOf(query))
	query = c.c.rewrite(query)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.c.add(ctx, verbOf(query))
	query = c.c.rewrite(query)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.c.add(ctx, verbOf(query))
	query = c.c.rewrite(query)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.c.add(ctx, "begin")
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{Tx: tx, c: c.c, ctx: ctx}, nil
}

func (c *countingConn) Ping(ctx context.Context) error {
	return c.Conn.(driver.Pinger).Ping(ctx)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid asks the driver when it can tell (go-sql-driver/mysql); pgx's
// connections say whether they are usable in ResetSession instead.
func (c *countingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type countingTx struct {
	driver.Tx
	c *counter
	// ctx is the transaction's, whose job its end is counted under.
	ctx context.Context
}

func (t countingTx) Commit() error {
	t.c.add(t.ctx, "commit")
	return t.Tx.Commit()
}

func (t countingTx) Rollback() error {
	t.c.add(t.ctx, "rollback")
	return t.Tx.Rollback()
}

var _ driver.NamedValueChecker = (*countingConn)(nil)

// CheckNamedValue keeps the driver's own argument conversions (unsigned
// integers, json.RawMessage…) that database/sql would otherwise replace
// with its defaults.
func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
