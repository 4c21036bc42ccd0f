package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
)

// runShards is `feedd shards <command>`: the operator's view of the
// logical shards (FEEDD_SHARDS, FEEDD_SHARD_DSNS; docs/clusters.md,
// "Sharding").
func runShards(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	table := shardsCommands()
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		var b strings.Builder
		b.WriteString("usage: feedd shards <command> [flags]\n\nThe logical shards the SQL truth is spread over by user id (FEEDD_SHARDS,\nFEEDD_SHARD_DSNS).\n\ncommands:\n")
		writeCommands(&b, table)
		b.WriteString("\n\"feedd help shards <command>\" lists the command's flags; docs/clusters.md, \"Sharding\", explains them.\n")
		io.WriteString(stderr, b.String())
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return flag.ErrHelp
		}
		return usageError{fmt.Errorf("shards: want a command: %s", commandNames(table))}
	}
	c, ok := findCommand(table, args[0])
	if !ok {
		return usageError{fmt.Errorf("shards: unknown command %q: want %s", args[0], commandNames(table))}
	}
	return c.run(ctx, args[1:], getenv, stdin, stdout, stderr)
}

// shardsCommands is the shards command's table.
func shardsCommands() []command {
	return []command{
		{name: "status", summary: "where each logical shard lives and its row counts (users, posts, follows, likes, outbox backlog)", run: shardsStatus},
		{name: "move", summary: "move a logical shard to another server while it serves: move SHARD --to DSN", run: shardsMove},
	}
}

func commandNames(table []command) string {
	var names []string
	for _, c := range table {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}

// shardRow is a line of shards status, and its JSON object.
type shardRow struct {
	Shard         int    `json:"shard"`
	Server        string `json:"server"`
	Database      string `json:"database"`
	Users         int64  `json:"users"`
	Posts         int64  `json:"posts"`
	Follows       int64  `json:"follows"`
	Likes         int64  `json:"likes"`
	OutboxBacklog int64  `json:"outbox_backlog"`
	Error         string `json:"error,omitempty"`
}

// shardsStatus is `feedd shards status`: a row per logical shard (one row
// for an unsharded database). It reads only, so it is safe while feedd
// serves; each count is a full count, seconds on a large shard.
func shardsStatus(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	var cfg config
	var asJSON bool
	f := newFlagSet("feedd shards status", getenv, stderr, `usage: feedd shards status [--json] [flags]

Shows where each logical shard lives (its server, without a password, and
its database) and its row counts: users, posts, follows, likes and the
outbox events not yet relayed. A shard that does not answer shows its error,
and the exit status is 1. Without FEEDD_SHARD_DSNS it shows the one
database.
`)
	f.boolean(&asJSON, "json", false, "write a JSON array, an object per shard, instead of the table")
	f.settings(&cfg, "mysql-dsn", "postgres-dsn", "shards", "shard-dsns", "data-dir")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := cfg.checkSQL(); err != nil {
		return err
	}
	if cfg.embedded() {
		return usageError{errors.New("shards status: no SQL server is set (FEEDD_SHARD_DSNS, FEEDD_MYSQL_DSN or FEEDD_POSTGRES_DSN); the embedded SQLite is one database, never sharded")}
	}
	var statuses []shards.ShardStatus
	if cfg.sharded() {
		s, err := openShards(ctx, cfg, sqlstore.Pools{Write: 2}, sqlstore.Timeouts{})
		if err != nil {
			return fmt.Errorf("shards status: %w", err)
		}
		defer s.Close()
		statuses = s.Status(ctx)
	} else {
		store, err := openStore(ctx, cfg, sqlstore.Pools{Write: 2}, sqlstore.Timeouts{})
		if err != nil {
			return fmt.Errorf("shards status: %w", err)
		}
		defer store.Close()
		st := shards.ShardStatus{DSN: cmp.Or(cfg.mysqlDSN, cfg.postgresDSN)}
		st.Counts, st.Err = databases(store)[0].RowCounts(ctx)
		statuses = append(statuses, st)
	}
	rows := make([]shardRow, len(statuses))
	failed := 0
	for i, st := range statuses {
		server, db := describeDSN(st.DSN)
		rows[i] = shardRow{Shard: st.Shard, Server: server, Database: db,
			Users: st.Counts["users"], Posts: st.Counts["posts"], Follows: st.Counts["follows"],
			Likes: st.Counts["likes"], OutboxBacklog: st.Counts["outbox_backlog"]}
		if st.Err != nil {
			failed++
			rows[i].Error = st.Err.Error()
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		writeShardRows(stdout, rows)
	}
	if failed > 0 {
		return fmt.Errorf("shards status: %d of %d shards did not answer", failed, len(rows))
	}
	return nil
}

func writeShardRows(w io.Writer, rows []shardRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tserver\tdatabase\tusers\tposts\tfollows\tlikes\toutbox backlog\t")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%d\t%s\t%s\terror: %s\t\t\t\t\t\n", r.Shard, r.Server, r.Database, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", r.Shard, r.Server, r.Database, r.Users, r.Posts, r.Follows, r.Likes, r.OutboxBacklog)
	}
	tw.Flush()
}

// describeDSN returns the server a DSN reaches, as user@host:port (never
// its password), and the database it names. A DSN its driver does not
// parse is shown with its password hidden.
func describeDSN(dsn string) (server, database string) {
	if shards.BackendOf(dsn) == shards.Postgres {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return showSecret(connString, dsn), ""
		}
		return cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)), cfg.Database
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return showSecret(credentialURL, dsn), ""
	}
	return cfg.User + "@" + cfg.Addr, cfg.DBName
}

// shardsMove is `feedd shards move SHARD --to DSN` (shardmove.go), on
// the map FEEDD_SHARDS and FEEDD_SHARD_DSNS give; its flags are its own,
// the map comes from the environment.
func shardsMove(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	var cfg config
	f := newFlagSet("feedd shards move", getenv, stderr, moveUsage)
	f.settings(&cfg, "shards", "shard-dsns")
	if err := f.parse(nil); err != nil {
		return err
	}
	if !cfg.sharded() {
		return usageError{errors.New("shards move: FEEDD_SHARD_DSNS is not set: there are no shards to move")}
	}
	m, err := cfg.shardMap()
	if err != nil {
		return err
	}
	switch moveShard(ctx, m, args, stdout, stderr) {
	case 0:
		return nil
	case 2:
		return usageError{errors.New("shards move: see the usage above")}
	}
	return errors.New("shards move: the shard was not moved; it serves where it was")
}
