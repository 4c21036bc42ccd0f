package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is a row of a command table: feedd's roles and commands
// (commandTable), or bench's (benchCommands). The table drives dispatch,
// the overview help prints and the message for an unknown name.
type command struct {
	name    string
	summary string
	role    bool // a role of the service; its flags are the settings table's
	hidden  bool // started by feedd itself, so not in help
	run     commandFunc
}

// commandFunc runs a command with the arguments after its name.
type commandFunc func(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error

// commandTable is feedd's roles and commands, in the order help lists
// them. A function, not a variable: help and dispatch read it, and the
// help command is in it.
func commandTable() []command {
	return []command{
		{name: "all", role: true, summary: "API, relay, dispatcher and workers in one process (the default)", run: roleRunner("all")},
		{name: "serve", role: true, summary: "the HTTP API only", run: roleRunner("serve")},
		{name: "work", role: true, summary: "relay, dispatcher and batch workers; serves /healthz, /readyz and /metrics", run: roleRunner("work")},
		{name: "migrate", role: true, summary: "apply the SQL migrations and exit", run: roleRunner("migrate")},
		{name: "bench", summary: "the load tool: write a synthetic graph, drive workloads and report", run: runBench},
		{name: "import", summary: "import an existing app's users, follows, posts and likes from JSON Lines files", run: runImport},
		{name: "export", summary: "write everything feedd holds about one user as JSON Lines", run: runExport},
		{name: "shards", summary: "the logical shards: shards status shows where each lives and its row counts", run: runShards},
		{name: "requeue-dead", summary: "move RabbitMQ's dead letters back onto their queues, attempts reset", run: runRequeueDead},
		{name: "version", summary: "print the module version and VCS revision feedd was built from", run: runVersion},
		{name: "help", summary: "print help: the overview, or a role's or command's flags and settings", run: runHelp},
	}
}

func findCommand(table []command, name string) (command, bool) {
	for _, c := range table {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// dispatch runs the command of table named by args[0]; in feedd's own
// table, arguments that start with a flag run the default role, all.
func dispatch(ctx context.Context, table []command, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	name := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	c, ok := findCommand(table, name)
	if !ok {
		return unknownCommand(name)
	}
	return c.run(ctx, args, getenv, stdin, stdout, stderr)
}

func unknownCommand(name string) error {
	var names []string
	for _, c := range commandTable() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return usageError{fmt.Errorf("unknown role or command %q: want one of %s", name, strings.Join(names, ", "))}
}

// roleRunner runs feedd in one of its roles.
func roleRunner(role string) commandFunc {
	return func(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
		cfg, err := parseConfig(append([]string{role}, args...), getenv, stderr)
		if err != nil {
			return err
		}
		cfg.cmdline = newRedactor(args, getenv).string(strings.Join(append([]string{"feedd", role}, args...), "\x00"))
		logger := newLogger(stderr, cfg.logLevel, cfg.logFormat)
		if cfg.role == "migrate" {
			return migrate(ctx, cfg, logger, stdout)
		}
		d, err := openDeps(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer d.close(logger)
		return start(ctx, cfg, d, logger, stdout)
	}
}

// overview is what `feedd help` prints: how to call feedd, its roles and
// its commands.
func overview() string {
	var b strings.Builder
	b.WriteString(`usage: feedd [role] [flags]
       feedd <command> [flags]

feedd is a follow-feed service: one binary that runs the API, the outbox
relay, the fan-out and its workers together (the default role) or as
separate roles sharing a SQL server (MySQL or PostgreSQL), Redis and
RabbitMQ.
`)
	var roles, cmds []command
	for _, c := range commandTable() {
		if c.role {
			roles = append(roles, c)
		} else {
			cmds = append(cmds, c)
		}
	}
	b.WriteString("\nroles:\n")
	writeCommands(&b, roles)
	b.WriteString("\ncommands:\n")
	writeCommands(&b, cmds)
	b.WriteString("\n\"feedd help <role or command>\" lists what it reads; docs/configuration.md explains every setting.\n")
	return b.String()
}

// writeCommands lists a table's commands, a line each.
func writeCommands(b *strings.Builder, table []command) {
	width := 0
	for _, c := range table {
		if !c.hidden {
			width = max(width, len(c.name))
		}
	}
	for _, c := range table {
		if !c.hidden {
			fmt.Fprintf(b, "  %-*s  %s\n", width, c.name, c.summary)
		}
	}
}

// runHelp is `feedd help [role or command [subcommand]]`: the overview,
// or what `feedd <command> -h` prints, on standard output.
func runHelp(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, _ io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		_, err := io.WriteString(stdout, overview())
		return err
	}
	if _, ok := findCommand(commandTable(), args[0]); !ok {
		return unknownCommand(args[0])
	}
	err := dispatch(ctx, commandTable(), append(args, "-h"), getenv, stdin, stdout, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
