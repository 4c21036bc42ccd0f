package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Several MySQL hosts in one DSN: a MariaDB Galera cluster, named
// "user@tcp(host1:3306,host2:3306,host3:3306)/feedd". Every node of a
// Galera cluster takes writes, but two nodes writing the same rows abort
// each other's transactions at COMMIT (certification, error 1213), and a
// hot row (a like count, a follower count) makes that frequent. So the
// store writes through one node at a time, as a proxy in front of the
// cluster with one active server and the others as backups would:
//
//   - the writing node is the first one of the list that answers and is
//     ready (wsrep_ready=ON), and it stays the writing node until it fails:
//     a refused or lost connection, or "not ready" (1047);
//   - then the next node of the list (in a ring) takes over, and the
//     connections to the failed one are dropped as they come back to the
//     pool (driver.Validator), so that writes do not go to two nodes;
//   - a node earlier in the list than the writing one (the first node,
//     restarted after a crash and rejoined) takes the writes back once it
//     has been synced for failbackAfter: no operator step brings it back.
//
// A read that failed because its node went away is sent again on another
// connection (database/sql does that for driver.ErrBadConn); writes are
// retried by Store.write, as whole transactions that did not reach COMMIT
// (dialect.retryable).

// failbackEvery is how often a cluster whose writing node is not its first
// checks the nodes before it; failbackAfter is how long such a node must
// have been synced before it takes the writes back, so that a node that
// flaps does not move the writes to and fro.
const (
	failbackEvery = time.Second
	failbackAfter = 2 * time.Second
)

// splitHosts takes the host list out of a go-sql-driver DSN. A DSN that
// names several hosts, "user@tcp(a:1,b:2)/db?x=y", comes back as the DSN
// of its first host and the list; any other comes back as it is, with no
// list.
func splitHosts(dsn string) (string, []string) {
	// As the driver reads a DSN: the database name starts after the last
	// slash, the address after the last @ before it.
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return dsn, nil
	}
	at := strings.LastIndexByte(dsn[:slash], '@')
	netAddr := dsn[at+1 : slash]
	open := strings.IndexByte(netAddr, '(')
	if open < 0 || !strings.HasSuffix(netAddr, ")") || netAddr[:open] != "tcp" {
		return dsn, nil
	}
	hosts := strings.Split(netAddr[open+1:len(netAddr)-1], ",")
	if len(hosts) < 2 {
		return dsn, nil
	}
	for i, h := range hosts {
		hosts[i] = strings.TrimSpace(h)
	}
	return dsn[:at+1] + "tcp(" + hosts[0] + ")" + dsn[slash:], hosts
}

// cluster is a driver.Connector over the nodes of a multi-host DSN, that
// connects to the writing node. It is safe for concurrent use, and shared
// by the pools of one store, so that they all follow the same node.
type cluster struct {
	nodes []driver.Connector // one per host, in the DSN's order
	addrs []string

	mu sync.Mutex
	// writer is the index of the writing node; gen counts the moves from
	// node to node, so that a connection can tell it is to a node that no
	// longer takes the writes.
	writer int    // guarded by mu
	gen    uint64 // guarded by mu
	// probed is the first node before the writing one that the failback
	// loop found synced (-1: none), since when it has been.
	probed int        // guarded by mu
	since  time.Time  // guarded by mu
	moves  []NodeMove // the last 100; guarded by mu

	stop   context.CancelFunc
	done   chan struct{}
	closed sync.Once
}

// NodeMove is one move of a multi-host store's writes from a node to
// another.
type NodeMove struct {
	At       time.Time
	From, To string
	Why      string
}

// newCluster returns a connector over cfg with each of addrs in turn as
// its address, and starts its failback loop, which Close stops.
func newCluster(cfg *mysql.Config, addrs []string) (*cluster, error) {
	c := &cluster{addrs: addrs, probed: -1, done: make(chan struct{})}
	for _, a := range addrs {
		nc := cfg.Clone()
		nc.Addr = a
		conn, err := mysql.NewConnector(nc)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", a, err)
		}
		c.nodes = append(c.nodes, conn)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.failback(ctx)
	return c, nil
}

// Driver is the driver of the nodes' connectors.
func (c *cluster) Driver() driver.Driver { return c.nodes[0].Driver() }

// Close stops the failback loop; sql.DB.Close calls it (once per pool on
// it; the second call does nothing).
func (c *cluster) Close() error {
	c.closed.Do(func() {
		c.stop()
		<-c.done
	})
	return nil
}

// Connect connects to the writing node; when that fails, to the next
// one, which becomes the writing node, and so on once round the ring.
func (c *cluster) Connect(ctx context.Context) (driver.Conn, error) {
	var errs []error
	for range c.nodes {
		node, gen := c.current()
		conn, err := c.connect(ctx, node)
		if err == nil {
			return &nodeConn{Conn: conn, c: c, node: node, gen: gen}, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("%s: %w", c.addrs[node], err))
		c.fail(node, gen, err)
	}
	return nil, fmt.Errorf("no node of %d is ready: %w", len(c.nodes), errors.Join(errs...))
}

// connect opens a connection to node and checks that it is ready.
func (c *cluster) connect(ctx context.Context, node int) (driver.Conn, error) {
	conn, err := c.nodes[node].Connect(ctx)
	if err != nil {
		return nil, err
	}
	st, err := wsrepState(ctx, conn)
	if err == nil && !st.ready() {
		err = fmt.Errorf("not ready (wsrep_ready=%s, wsrep_local_state_comment=%s)", st.readyFlag, st.comment)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (c *cluster) current() (int, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writer, c.gen
}

// valid reports whether a connection made at gen is still to the writing
// node.
func (c *cluster) valid(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen == gen
}

// fail moves the writes from node to the next one, unless they moved
// since gen (another connection saw the failure first).
func (c *cluster) fail(node int, gen uint64, why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.writer != node {
		return
	}
	c.moveLocked((node+1)%len(c.nodes), why.Error())
}

func (c *cluster) moveLocked(to int, why string) {
	c.moves = append(c.moves, NodeMove{At: time.Now(), From: c.addrs[c.writer], To: c.addrs[to], Why: why})
	if len(c.moves) > 100 {
		c.moves = c.moves[len(c.moves)-100:]
	}
	c.writer = to
	c.gen++
	c.probed, c.since = -1, time.Time{}
}

// failback gives the writes back to the first synced node before the
// writing one, once it has been synced for failbackAfter.
func (c *cluster) failback(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(failbackEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		writer, gen := c.current()
		first := -1
		for node := range writer {
			if c.synced(ctx, node) {
				first = node
				break
			}
		}
		c.observe(first, gen)
	}
}

// synced reports whether node answers, synced with the cluster.
func (c *cluster) synced(ctx context.Context, node int) bool {
	ctx, cancel := context.WithTimeout(ctx, failbackEvery)
	defer cancel()
	conn, err := c.nodes[node].Connect(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	st, err := wsrepState(ctx, conn)
	return err == nil && st.ready() && st.comment == "Synced"
}

// observe notes that node (-1: none) is the first synced node before
// the writing one, and gives it the writes once it has been for
// failbackAfter, unless they moved since gen.
func (c *cluster) observe(node int, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	now := time.Now()
	if c.probed != node {
		c.probed, c.since = node, now
		return
	}
	if node >= 0 && now.Sub(c.since) >= failbackAfter {
		c.moveLocked(node, "synced again")
	}
}

// Nodes is what a multi-host store says of its nodes.
type Nodes struct {
	Writer string     // the node that takes the writes now
	Moves  uint64     // how often the writes moved since the store opened
	Last   []NodeMove // the last moves (up to 100), oldest first
}

// Nodes returns the writing node of a multi-host store and its moves;
// false for a store on one host.
func (s *Store) Nodes() (Nodes, bool) {
	if s.nodes == nil {
		return Nodes{}, false
	}
	c := s.nodes
	c.mu.Lock()
	defer c.mu.Unlock()
	// gen counts the moves.
	return Nodes{Writer: c.addrs[c.writer], Moves: c.gen, Last: append([]NodeMove(nil), c.moves...)}, true
}

// wsrep is what a node says of its place in a Galera cluster.
type wsrep struct {
	galera    bool   // the server runs Galera at all
	readyFlag string // wsrep_ready: ON when it takes queries
	comment   string // wsrep_local_state_comment: Synced, Donor/Desynced, Joined…
}

// ready: a server without Galera is its own judge; a Galera node must
// say it takes queries (otherwise they fail with 1047).
func (w wsrep) ready() bool { return !w.galera || w.readyFlag == "ON" }

func wsrepState(ctx context.Context, conn driver.Conn) (wsrep, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return wsrep{}, fmt.Errorf("a %T connection cannot query", conn)
	}
	rows, err := q.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment')", nil)
	if err != nil {
		return wsrep{}, err
	}
	defer rows.Close()
	var w wsrep
	row := make([]driver.Value, 2)
	for {
		if err := rows.Next(row); errors.Is(err, io.EOF) {
			return w, nil
		} else if err != nil {
			return wsrep{}, err
		}
		name, value := asString(row[0]), asString(row[1])
		switch strings.ToLower(name) {
		case "wsrep_ready":
			w.galera, w.readyFlag = true, value
		case "wsrep_local_state_comment":
			w.comment = value
		}
	}
}

func asString(v driver.Value) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// nodeConn is a connection to one node of a cluster. An error that says
// the node is gone or not ready moves the cluster's writes to the next
// node; a read that failed so outside a transaction is sent again, on
// another connection.
type nodeConn struct {
	driver.Conn
	c    *cluster
	node int
	gen  uint64
	inTx bool
	bad  bool
}

var (
	_ driver.QueryerContext     = (*nodeConn)(nil)
	_ driver.ExecerContext      = (*nodeConn)(nil)
	_ driver.ConnBeginTx        = (*nodeConn)(nil)
	_ driver.Pinger             = (*nodeConn)(nil)
	_ driver.SessionResetter    = (*nodeConn)(nil)
	_ driver.Validator          = (*nodeConn)(nil)
	_ driver.ConnPrepareContext = (*nodeConn)(nil)
	_ driver.NamedValueChecker  = (*nodeConn)(nil)
)

// check looks at err from a statement (query, empty for none): when the
// node is gone or not ready, the cluster moves on and the connection is
// not used again; a read outside a transaction then becomes
// driver.ErrBadConn, which database/sql answers by running it again on
// another connection.
func (n *nodeConn) check(ctx context.Context, query string, err error) error {
	if err == nil || ctx.Err() != nil || !nodeLost(err) {
		return err
	}
	n.bad = true
	n.c.fail(n.node, n.gen, err)
	if !n.inTx && readOnly(query) {
		return driver.ErrBadConn
	}
	return err
}

// readOnly reports whether a statement only reads, so that running it
// twice does no harm.
func readOnly(query string) bool {
	switch verbOf(query) {
	case "select", "show":
		return !strings.Contains(strings.ToUpper(query), " FOR UPDATE")
	}
	return false
}

func (n *nodeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := n.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return rows, n.check(ctx, query, err)
}

func (n *nodeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := n.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return res, n.check(ctx, query, err)
}

func (n *nodeConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := n.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	return st, n.check(ctx, query, err)
}

// BeginTx: a BEGIN that failed did nothing, so it is always safe to send
// again on another connection.
func (n *nodeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := n.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err = n.check(ctx, "", err); err != nil {
		if n.bad {
			return nil, driver.ErrBadConn
		}
		return nil, err
	}
	n.inTx = true
	return nodeTx{Tx: tx, n: n, ctx: ctx}, nil
}

func (n *nodeConn) Ping(ctx context.Context) error {
	if err := n.check(ctx, "", n.Conn.(driver.Pinger).Ping(ctx)); err != nil {
		if n.bad {
			return driver.ErrBadConn
		}
		return err
	}
	return nil
}

func (n *nodeConn) ResetSession(ctx context.Context) error {
	if n.bad || !n.c.valid(n.gen) {
		return driver.ErrBadConn
	}
	return n.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid: a connection to a node that no longer takes the writes goes.
func (n *nodeConn) IsValid() bool {
	return !n.bad && n.c.valid(n.gen) && n.Conn.(driver.Validator).IsValid()
}

func (n *nodeConn) CheckNamedValue(nv *driver.NamedValue) error {
	return n.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

type nodeTx struct {
	driver.Tx
	n   *nodeConn
	ctx context.Context
}

func (t nodeTx) Commit() error {
	t.n.inTx = false
	return t.n.check(t.ctx, "", t.Tx.Commit())
}

func (t nodeTx) Rollback() error {
	t.n.inTx = false
	return t.n.check(t.ctx, "", t.Tx.Rollback())
}

// MySQL error numbers of a node that cannot serve: ER_UNKNOWN_COM_ERROR,
// which a Galera node outside the primary component answers ("WSREP has
// not yet prepared node for application use"), ER_SERVER_SHUTDOWN and
// ER_CONNECTION_KILLED.
const (
	mysqlNotReady       = 1047
	mysqlServerShutdown = 1053
	mysqlConnKilled     = 1927
)

// nodeLost reports whether err says the server is gone (the connection
// was refused, reset or closed) or cannot serve.
func nodeLost(err error) bool {
	switch mysqlErrNumber(err) {
	case mysqlNotReady, mysqlServerShutdown, mysqlConnKilled:
		return true
	}
	return connLost(err)
}

// connLost reports whether err is a connection that broke: whatever was
// sent on it may or may not have been done.
func connLost(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || (errors.As(err, &ne) && !errors.Is(err, context.Canceled))
}
