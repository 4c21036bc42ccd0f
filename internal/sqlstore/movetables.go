package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The tables of a move, read from the database's catalogue rather than
// listed here, so that a table a later migration adds moves too.

// notMoved are the tables a move leaves: the target's migration and claim
// write its own schema_migrations and shard_identity, the move's own
// bookkeeping stays with the source, and the replica heartbeats are each
// process's, written anew.
var notMoved = []string{"schema_migrations", "shard_identity", "shard_moves", "shard_changes", "replica_heartbeats"}

// colKind is how a column's values are read and written back.
type colKind int

const (
	colInt colKind = iota
	colText
	colBytes
	colFloat
)

type moveColumn struct {
	name string
	kind colKind
	slot string // its place in shard_changes when it is in the primary key
}

// moveTable is a table a move copies.
type moveTable struct {
	name   string
	cols   []moveColumn
	pk     []moveColumn // in key order
	serial string       // the auto-increment (identity) column, if any
}

// moveTables lists the database's tables but notMoved, with their columns
// and primary keys.
func (s *Store) moveTables(ctx context.Context) ([]moveTable, error) {
	q := `SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, c.EXTRA = 'auto_increment', COALESCE(k.ORDINAL_POSITION, 0)
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_TYPE = 'BASE TABLE'
LEFT JOIN information_schema.KEY_COLUMN_USAGE k ON k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME
	AND k.COLUMN_NAME = c.COLUMN_NAME AND k.CONSTRAINT_NAME = 'PRIMARY'
WHERE c.TABLE_SCHEMA = DATABASE()
ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION`
	if s.postgres() {
		q = `SELECT c.table_name, c.column_name, c.data_type, c.is_identity = 'YES', COALESCE(k.ordinal_position, 0)
FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
LEFT JOIN information_schema.table_constraints tc ON tc.table_schema = c.table_schema AND tc.table_name = c.table_name
	AND tc.constraint_type = 'PRIMARY KEY'
LEFT JOIN information_schema.key_column_usage k ON k.constraint_schema = tc.constraint_schema AND k.constraint_name = tc.constraint_name
	AND k.table_name = c.table_name AND k.column_name = c.column_name
WHERE c.table_schema = current_schema()
ORDER BY c.table_name, c.ordinal_position`
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var tables []moveTable
	type keyed struct {
		col moveColumn
		pos int
	}
	keys := map[string][]keyed{}
	for rows.Next() {
		var table, col, typ string
		var serial bool
		var pos int
		if err := rows.Scan(&table, &col, &typ, &serial, &pos); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		table, col = strings.ToLower(table), strings.ToLower(col)
		if slices.Contains(notMoved, table) {
			continue
		}
		if len(tables) == 0 || tables[len(tables)-1].name != table {
			tables = append(tables, moveTable{name: table})
		}
		t := &tables[len(tables)-1]
		c := moveColumn{name: col, kind: kindOf(typ)}
		t.cols = append(t.cols, c)
		if serial {
			t.serial = col
		}
		if pos > 0 {
			keys[table] = append(keys[table], keyed{c, pos})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	for i := range tables {
		t := &tables[i]
		ks := keys[t.name]
		slices.SortFunc(ks, func(a, b keyed) int { return a.pos - b.pos })
		ints := 0
		for _, k := range ks {
			c := k.col
			switch {
			case c.kind == colInt && ints < 3:
				ints++
				c.slot = fmt.Sprintf("k%d", ints)
			case c.kind != colInt && !slices.ContainsFunc(t.pk, func(p moveColumn) bool { return p.slot == "ks" }):
				c.slot = "ks"
			default:
				return nil, fmt.Errorf("table %s: its primary key does not fit shard_changes (up to three integers and one string)", t.name)
			}
			t.pk = append(t.pk, c)
		}
		if len(t.pk) == 0 {
			return nil, fmt.Errorf("table %s has no primary key: a move copies tables by key", t.name)
		}
	}
	return tables, nil
}

func kindOf(typ string) colKind {
	switch strings.ToLower(typ) {
	case "bigint", "int", "integer", "smallint", "tinyint", "mediumint":
		return colInt
	case "blob", "tinyblob", "mediumblob", "longblob", "binary", "varbinary", "bytea":
		return colBytes
	case "double", "double precision", "real", "float":
		// A float read as text would not write back into PostgreSQL's
		// binary float8 parameter.
		return colFloat
	}
	return colText
}

func (t moveTable) colNames() string {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// triggerDDL creates the source's triggers on t: each refuses a write
// while the shard is fenced or moved, and records the changed row's key.
// An update records the old key too if the key changed.
func (t moveTable) triggerDDL(postgres bool) []string {
	slots := make([]string, len(t.pk))
	for i, c := range t.pk {
		slots[i] = c.slot
	}
	record := func(row string) string {
		vals := make([]string, len(t.pk))
		for i, c := range t.pk {
			vals[i] = row + "." + c.name
		}
		return fmt.Sprintf("INSERT INTO shard_changes (tbl, %s) VALUES ('%s', %s);", strings.Join(slots, ", "), t.name, strings.Join(vals, ", "))
	}
	keyChanged := func(same string) string {
		conds := make([]string, len(t.pk))
		for i, c := range t.pk {
			conds[i] = fmt.Sprintf("OLD.%s %s NEW.%s", c.name, same, c.name)
		}
		return strings.Join(conds, " AND ")
	}
	if postgres {
		fn := "feedd_mv_" + t.name
		return append(t.dropTriggerDDL(true)[:1],
			`CREATE OR REPLACE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE st TEXT;
BEGIN
	SELECT state INTO st FROM shard_moves WHERE one = 1 FOR SHARE;
	IF st IN ('fenced', 'moved') THEN
		RAISE EXCEPTION 'feedd: shard moving' USING ERRCODE = '`+moveSQLState+`';
	END IF;
	IF TG_OP <> 'DELETE' THEN `+record("NEW")+` END IF;
	IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NOT (`+keyChanged("IS NOT DISTINCT FROM")+`)) THEN `+record("OLD")+` END IF;
	RETURN NULL;
END $f$`,
			"CREATE TRIGGER feedd_mv AFTER INSERT OR UPDATE OR DELETE ON "+t.name+" FOR EACH ROW EXECUTE FUNCTION "+fn+"()")
	}
	fence := `DECLARE st VARCHAR(16);
	SELECT state INTO st FROM shard_moves WHERE one = 1 LOCK IN SHARE MODE;
	IF st IN ('fenced', 'moved') THEN
		SIGNAL SQLSTATE '` + moveSQLState + `' SET MESSAGE_TEXT = 'feedd: shard moving';
	END IF;`
	ddl := t.dropTriggerDDL(false)
	for _, ev := range []struct{ name, event, body string }{
		{"i", "INSERT", record("NEW")},
		{"u", "UPDATE", record("NEW") + " IF NOT (" + keyChanged("<=>") + ") THEN " + record("OLD") + " END IF;"},
		{"d", "DELETE", record("OLD")},
	} {
		ddl = append(ddl, fmt.Sprintf("CREATE TRIGGER feedd_mv_%s_%s AFTER %s ON %s FOR EACH ROW BEGIN\n\t%s\n\t%s\nEND",
			t.name, ev.name, ev.event, t.name, fence, ev.body))
	}
	return ddl
}

// dropTriggerDDL drops t's move triggers.
func (t moveTable) dropTriggerDDL(postgres bool) []string {
	if postgres {
		return []string{"DROP TRIGGER IF EXISTS feedd_mv ON " + t.name, "DROP FUNCTION IF EXISTS feedd_mv_" + t.name + "()"}
	}
	return []string{
		"DROP TRIGGER IF EXISTS feedd_mv_" + t.name + "_i",
		"DROP TRIGGER IF EXISTS feedd_mv_" + t.name + "_u",
		"DROP TRIGGER IF EXISTS feedd_mv_" + t.name + "_d",
	}
}

// scanRow reads a row of t's columns into values that write back as
// they were read (an integer, a float, a string, bytes, or NULL).
func (t moveTable) scanRow(rows *sql.Rows) ([]any, error) {
	dest := make([]any, len(t.cols))
	for i, c := range t.cols {
		switch c.kind {
		case colInt:
			dest[i] = new(sql.NullInt64)
		case colText:
			dest[i] = new(sql.NullString)
		case colFloat:
			dest[i] = new(sql.NullFloat64)
		default:
			dest[i] = new([]byte)
		}
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	vals := make([]any, len(dest))
	for i, d := range dest {
		switch v := d.(type) {
		case *sql.NullInt64:
			vals[i] = *v
		case *sql.NullString:
			vals[i] = *v
		case *sql.NullFloat64:
			vals[i] = *v
		case *[]byte:
			if *v == nil {
				vals[i] = nil
			} else {
				vals[i] = *v
			}
		}
	}
	return vals, nil
}
