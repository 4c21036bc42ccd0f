package sqlstore

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"
	"sync/atomic"
)

// Statement counting: every statement a MySQL pool sends is counted by
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

// counter counts statements by verb for one pool.
type counter struct {
	pool  string
	verbs sync.Map // verb -> *atomic.Int64
}

func (c *counter) add(verb string) {
	v, ok := c.verbs.Load(verb)
	if !ok {
		v, _ = c.verbs.LoadOrStore(verb, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
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

// countingConnector wraps a driver.Connector so that its connections count
// what they send.
type countingConnector struct {
	driver.Connector
	c *counter
}

func (cc countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cc.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: cc.c}, nil
}

// countingConn is a go-sql-driver/mysql connection that counts. With
// interpolateParams (OpenMySQL sets it) database/sql sends every
// statement through QueryContext or ExecContext; Prepare is counted too
// for completeness.
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

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.c.add(verbOf(query))
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.c.add(verbOf(query))
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.c.add(verbOf(query))
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.c.add("begin")
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{Tx: tx, c: c.c}, nil
}

func (c *countingConn) Ping(ctx context.Context) error {
	return c.Conn.(driver.Pinger).Ping(ctx)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

type countingTx struct {
	driver.Tx
	c *counter
}

func (t countingTx) Commit() error {
	t.c.add("commit")
	return t.Tx.Commit()
}

func (t countingTx) Rollback() error {
	t.c.add("rollback")
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
