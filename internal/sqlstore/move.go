package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A move copies a database (a logical shard) to another server while it
// serves, pt-online-schema-change style: triggers on every table record
// the key of each changed row in shard_changes while the rows are copied,
// the changes are replayed (each key's row read anew, upserted or deleted)
// until few are left, then a fence stops the writes here, the last
// changes are replayed, and the database says where it went. The package
// shards runs the steps (shards.Move) and switches its routes.

// Move states, in shard_moves.state.
const (
	MoveCopying = "copying"
	MoveFenced  = "fenced"
	MoveMoved   = "moved"
	MoveAborted = "aborted"
)

// moveSQLState is the SQLSTATE of a write refused by a fenced or moved
// database: a class of its own, so that it is told apart by code.
const moveSQLState = "FD001"

// IsMoving reports whether err is a write refused because the database
// is fenced for a move or has moved: the write changed nothing, and runs
// again at the shard's new place.
func IsMoving(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return string(me.SQLState[:]) == moveSQLState
	}
	return pgCode(err) == moveSQLState
}

// MoveState is a database's shard_moves row.
type MoveState struct {
	State   string // "" when the database has never moved
	MovedTo string // where it went, once moved
}

// MoveState reads the database's move state from the primary: a process
// that polls it switches as soon as the move is done.
func (s *Store) MoveState(ctx context.Context) (MoveState, error) {
	var m MoveState
	err := s.db.QueryRowContext(ctx, "SELECT state, moved_to FROM shard_moves WHERE one = 1").Scan(&m.State, &m.MovedTo)
	switch {
	case errors.Is(err, sql.ErrNoRows), s.missingTable(err):
		// A database migrated before moves existed has never moved.
		return MoveState{}, nil
	case err != nil:
		return MoveState{}, fmt.Errorf("sqlstore: move state: %w", err)
	}
	return m, nil
}

// missingTable reports whether err says a table does not exist.
func (s *Store) missingTable(err error) bool {
	return mysqlErrNumber(err) == 1146 || pgCode(err) == "42P01"
}

func (s *Store) postgres() bool { return s.pgConfig != nil }

// ShardMove is a move of one database (the source) to another (the
// target, migrated and empty but for what an earlier attempt left).
type ShardMove struct {
	src, dst *Store
	tables   []moveTable
}

// StartMove makes the source record its changes (shard_changes and a
// trigger on each of tables()) and says it is copying. From its return,
// every committed write of the source is either visible to a copy that
// starts later or recorded: creating a trigger waits for the transactions
// that already wrote the table (MySQL's metadata lock, PostgreSQL's
// table lock). The target's moved tables are emptied: what is there is an
// earlier attempt's copy, made stale by the writes since.
func (s *Store) StartMove(ctx context.Context, dst *Store) (*ShardMove, error) {
	if s.postgres() != dst.postgres() {
		return nil, errors.New("sqlstore: move: the source and the target are different kinds of server")
	}
	tables, err := s.moveTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: move: %w", err)
	}
	m := &ShardMove{src: s, dst: dst, tables: tables}
	for _, t := range tables {
		if _, err := dst.db.ExecContext(ctx, "DELETE FROM "+t.name); err != nil {
			return nil, fmt.Errorf("sqlstore: move: empty the target's %s: %w", t.name, err)
		}
	}
	if err := m.setState(ctx, MoveCopying, "", ""); err != nil {
		return nil, err
	}
	for _, q := range s.captureDDL() {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("sqlstore: move: create shard_changes: %w", err)
		}
	}
	for _, t := range tables {
		for _, q := range t.triggerDDL(s.postgres()) {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("sqlstore: move: trigger on %s: %w", t.name, err)
			}
		}
	}
	return m, nil
}

// Tables names the tables the move copies.
func (m *ShardMove) Tables() []string {
	names := make([]string, len(m.tables))
	for i, t := range m.tables {
		names[i] = t.name
	}
	return names
}

// captureDDL creates (or empties, after an earlier attempt) the change
// table; its keys are a table's primary key spread over up to three
// integers (k1..k3) and one string (ks).
func (s *Store) captureDDL() []string {
	if s.postgres() {
		return []string{
			"CREATE TABLE IF NOT EXISTS shard_changes (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY," +
				" tbl TEXT NOT NULL, k1 BIGINT, k2 BIGINT, k3 BIGINT, ks TEXT)",
			"TRUNCATE shard_changes",
		}
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS shard_changes (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY," +
			" tbl VARCHAR(64) NOT NULL, k1 BIGINT NULL, k2 BIGINT NULL, k3 BIGINT NULL, ks VARBINARY(1020) NULL" +
			") ENGINE=InnoDB",
		"TRUNCATE TABLE shard_changes",
	}
}

// setState writes the source's shard_moves row; from is the state it
// must be in ("" for any).
func (m *ShardMove) setState(ctx context.Context, state, movedTo, from string) error {
	now := millis(time.Now())
	var res sql.Result
	var err error
	if from == "" {
		res, err = m.src.db.ExecContext(ctx, "UPDATE shard_moves SET state = ?, moved_to = ?, updated_at = ? WHERE one = 1", state, movedTo, now)
		if n, _ := rowsAffected(res, err); err == nil && n == 0 {
			_, err = m.src.db.ExecContext(ctx, "INSERT INTO shard_moves (one, state, moved_to, updated_at) VALUES (1, ?, ?, ?)", state, movedTo, now)
		}
	} else {
		res, err = m.src.db.ExecContext(ctx, "UPDATE shard_moves SET state = ?, moved_to = ?, updated_at = ? WHERE one = 1 AND state = ?", state, movedTo, now, from)
		if n, _ := rowsAffected(res, err); err == nil && n != 1 {
			err = fmt.Errorf("the source is no longer %s", from)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlstore: move: set state %s: %w", state, err)
	}
	return nil
}

// Fence stops the source's writes: from its return every write there
// fails (IsMoving). The triggers read the state with a shared lock, so
// the fence's update waits for the writes that read "copying" to commit
// (their changes are then recorded), and the writes that come after it
// wait and then read "fenced". A fence that waits longer than wait for a
// long transaction gives up, changing nothing, so that the writes queued
// behind it go on; the caller tries again.
func (m *ShardMove) Fence(ctx context.Context, wait time.Duration) error {
	conn, err := m.src.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: move: fence: %w", err)
	}
	defer conn.Close()
	secs := max(1, int(wait.Round(time.Second)/time.Second))
	set, reset := fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", secs), "SET SESSION innodb_lock_wait_timeout = DEFAULT"
	if m.src.postgres() {
		set, reset = fmt.Sprintf("SET lock_timeout = %d", wait.Milliseconds()), "RESET lock_timeout"
	}
	if _, err := conn.ExecContext(ctx, set); err != nil {
		return fmt.Errorf("sqlstore: move: fence: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), reset)
	res, err := conn.ExecContext(ctx, "UPDATE shard_moves SET state = ?, updated_at = ? WHERE one = 1 AND state = ?", MoveFenced, millis(time.Now()), MoveCopying)
	if n, err := rowsAffected(res, err); err != nil || n != 1 {
		if err == nil {
			err = errors.New("the source is no longer copying")
		}
		return fmt.Errorf("sqlstore: move: fence: %w", err)
	}
	return nil
}

// Finish records that the target at movedTo is the shard now: the source
// keeps refusing writes, and tells every process where to go.
func (m *ShardMove) Finish(ctx context.Context, movedTo string) error {
	return m.setState(ctx, MoveMoved, movedTo, MoveFenced)
}

// Abort gives the shard back to the source: writes go on there, the
// triggers and the change table go, and the target is left as it is
// (a later move empties it).
func (m *ShardMove) Abort(ctx context.Context) error {
	return errors.Join(m.setState(ctx, MoveAborted, "", ""), m.src.dropCapture(ctx, m.tables))
}

// ForgetMove readies a database that a shard moved away from to take it
// back: its move triggers, its change table and its move state go.
func (s *Store) ForgetMove(ctx context.Context) error {
	tables, err := s.moveTables(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: forget move: %w", err)
	}
	if err := s.dropCapture(ctx, tables); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM shard_moves"); err != nil {
		return fmt.Errorf("sqlstore: forget move: %w", err)
	}
	return nil
}

func (s *Store) dropCapture(ctx context.Context, tables []moveTable) error {
	var errs []error
	for _, t := range tables {
		for _, q := range t.dropTriggerDDL(s.postgres()) {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				errs = append(errs, fmt.Errorf("sqlstore: move: drop triggers: %w", err))
			}
		}
	}
	if _, err := s.db.ExecContext(ctx, "DROP TABLE IF EXISTS shard_changes"); err != nil {
		errs = append(errs, fmt.Errorf("sqlstore: move: drop shard_changes: %w", err))
	}
	return errors.Join(errs...)
}

// Counts returns each moved table's rows on the source and on the target,
// each side in one statement, both at once.
func (m *ShardMove) Counts(ctx context.Context) (map[string][2]int64, error) {
	subs := make([]string, len(m.tables))
	for i, t := range m.tables {
		subs[i] = "(SELECT COUNT(*) FROM " + t.name + ")"
	}
	q := "SELECT " + strings.Join(subs, ", ")
	var sides [2][]int64
	var errs [2]error
	var wg sync.WaitGroup
	for side, st := range []*Store{m.src, m.dst} {
		wg.Go(func() {
			ns := make([]int64, len(m.tables))
			dest := make([]any, len(ns))
			for i := range ns {
				dest[i] = &ns[i]
			}
			errs[side] = st.db.QueryRowContext(ctx, q).Scan(dest...)
			sides[side] = ns
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("sqlstore: move: count rows: %w", err)
	}
	out := make(map[string][2]int64, len(m.tables))
	for i, t := range m.tables {
		out[t.name] = [2]int64{sides[0][i], sides[1][i]}
	}
	return out, nil
}

// Counters carries the source's auto-increment counters (the outbox's
// ids) over to the target, so that the target never hands out an id the
// source did. Run it fenced, when the source's counters stand still.
func (m *ShardMove) Counters(ctx context.Context) error {
	for _, t := range m.tables {
		if t.serial == "" {
			continue
		}
		var next, top int64
		if err := m.src.db.QueryRowContext(ctx, "SELECT COALESCE(MAX("+t.serial+"), 0) + 1 FROM "+t.name).Scan(&top); err != nil {
			return fmt.Errorf("sqlstore: move: counter of %s: %w", t.name, err)
		}
		if m.src.postgres() {
			// NULL until the sequence hands out its first value.
			var last sql.NullInt64
			seq := "pg_get_serial_sequence('" + t.name + "', '" + t.serial + "')"
			if err := m.src.db.QueryRowContext(ctx, "SELECT pg_sequence_last_value("+seq+"::regclass)").Scan(&last); err != nil {
				return fmt.Errorf("sqlstore: move: counter of %s: %w", t.name, err)
			}
			next = last.Int64 + 1
			if _, err := m.dst.db.ExecContext(ctx, "SELECT setval("+seq+", ?, false)", max(next, top)); err != nil {
				return fmt.Errorf("sqlstore: move: counter of %s: %w", t.name, err)
			}
			continue
		}
		var ai sql.NullInt64
		if err := m.src.db.QueryRowContext(ctx, "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", t.name).Scan(&ai); err != nil {
			return fmt.Errorf("sqlstore: move: counter of %s: %w", t.name, err)
		}
		next = ai.Int64
		if _, err := m.dst.db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", t.name, max(next, top))); err != nil {
			return fmt.Errorf("sqlstore: move: counter of %s: %w", t.name, err)
		}
	}
	return nil
}
