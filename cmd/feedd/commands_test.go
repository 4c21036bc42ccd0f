package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestCommandFlagsFromEnv: a command's variables set its flags' defaults, a
// flag wins over its variable, and a variable that does not parse fails
// the command with its name and value.
func TestCommandFlagsFromEnv(t *testing.T) {
	env := map[string]string{
		"FEEDD_BENCH_WORKERS":  "7",
		"FEEDD_BENCH_INTERVAL": "3s",
		"FEEDD_BENCH_SHARE":    "0.25",
		"FEEDD_BENCH_DRY":      "true",
		"FEEDD_MYSQL_DSN":      "root@tcp(db)/feedd",
	}
	c := newBenchFlags("run", func(k string) string { return env[k] }, io.Discard, "")
	var cfg config
	var (
		workers  int
		interval time.Duration
		share    float64
		dry      bool
		dsn      string
	)
	c.num(&workers, "workers", 1, "")
	c.dur(&interval, "interval", time.Second, "")
	c.float(&share, "share", 0.5, "")
	c.boolean(&dry, "dry", false, "")
	c.settings(&cfg, "mysql-dsn")
	if err := c.parse([]string{"--interval", "5s"}); err != nil {
		t.Fatalf("parse: %v", err)
	}
	dsn = cfg.mysqlDSN
	if workers != 7 || interval != 5*time.Second || share != 0.25 || !dry || dsn != "root@tcp(db)/feedd" {
		t.Fatalf("workers %d, interval %v, share %v, dry %v, dsn %q; want 7, 5s (the flag), 0.25, true, the variable's DSN",
			workers, interval, share, dry, dsn)
	}

	for name, bad := range map[string]string{"FEEDD_BENCH_WORKERS": "many", "FEEDD_BENCH_INTERVAL": "3", "FEEDD_BENCH_SHARE": "half", "FEEDD_BENCH_DRY": "maybe"} {
		env := map[string]string{name: bad}
		c := newBenchFlags("run", func(k string) string { return env[k] }, io.Discard, "")
		c.num(&workers, "workers", 1, "")
		c.dur(&interval, "interval", time.Second, "")
		c.float(&share, "share", 0.5, "")
		c.boolean(&dry, "dry", false, "")
		err := c.parse(nil)
		if err == nil || !strings.Contains(err.Error(), name+"=\""+bad+"\"") {
			t.Errorf("%s=%q: parse error %v; want one naming the variable and its value", name, bad, err)
		}
	}
}

// TestHelp: `feedd help` lists every role and command of the table;
// `feedd help X` prints X's help on standard output and exits 0, as
// `feedd X -h` prints it on standard error; a role's help lists the
// settings it reads, by concern, and not the others; an unknown name
// exits 2.
func TestHelp(t *testing.T) {
	help := func(args ...string) (stdout, stderr string, err error) {
		var o, e strings.Builder
		err = run(t.Context(), append([]string{"help"}, args...), func(string) string { return "" }, nil, &o, &e)
		return o.String(), e.String(), err
	}
	out, _, err := help()
	if err != nil {
		t.Fatalf("feedd help: %v", err)
	}
	for _, c := range commandTable() {
		if !strings.Contains(out, "  "+c.name+" ") || !strings.Contains(out, c.summary) {
			t.Errorf("feedd help does not list %s; output:\n%s", c.name, out)
		}
	}
	for _, c := range commandTable() {
		args := [][]string{{c.name}}
		if c.name == "bench" {
			for _, sub := range benchCommands() {
				if !sub.hidden {
					args = append(args, []string{"bench", sub.name})
				}
			}
		}
		for _, a := range args {
			out, errOut, err := help(a...)
			name := strings.Join(a, " ")
			if exitCode(err) != 0 || errOut != "" || !strings.Contains(out, "usage: feedd") {
				t.Errorf("feedd help %s: %v, stderr %q; want exit 0 and a usage on stdout; stdout:\n%s", name, err, errOut, out)
			}
			var o, e strings.Builder
			err = run(t.Context(), append(a, "-h"), func(string) string { return "" }, nil, &o, &e)
			if exitCode(err) != 0 || e.String() != out && name != "help" {
				t.Errorf("feedd %s -h: %v; want exit 0 and what feedd help %s prints, on stderr; stderr:\n%s", name, err, name, e.String())
			}
		}
	}

	// A role lists what it reads, by concern.
	for role, want := range map[string]struct{ has, hasNot []string }{
		"all":     {[]string{"-addr", "-workers", "-stream-max", "-amqp-url", "\nDefences:\n"}, nil},
		"serve":   {[]string{"-addr", "-stream-max", "-rate-user-read", "\nLive stream:\n"}, []string{"-workers", "-relay-workers", "-sql-work-conns"}},
		"work":    {[]string{"-addr", "-workers", "-relay-workers", "-sql-work-conns"}, []string{"-stream-max", "-rate-user-read", "\nLive stream:\n"}},
		"migrate": {[]string{"-mysql-dsn", "-postgres-dsn", "-postgres-read-dsn", "-data-dir", "\nBackends:\n"}, []string{"-addr", "-workers", "-redis-url", "\nDefences:\n"}},
	} {
		out, _, _ := help(role)
		for _, s := range want.has {
			if !strings.Contains(out, s) {
				t.Errorf("feedd help %s does not show %q", role, s)
			}
		}
		for _, s := range want.hasNot {
			if strings.Contains(out, s) {
				t.Errorf("feedd help %s shows %q, which it does not read", role, s)
			}
		}
	}

	// Every command that reads the SQL store takes either server.
	for _, cmd := range [][]string{{"import"}, {"export"}, {"bench", "graph"}} {
		out, _, _ := help(cmd...)
		for _, s := range []string{"-mysql-dsn", "-postgres-dsn", "(FEEDD_POSTGRES_DSN)"} {
			if !strings.Contains(out, s) {
				t.Errorf("feedd help %s does not show %q", strings.Join(cmd, " "), s)
			}
		}
	}

	for _, bad := range [][]string{{"nope"}, {"bench", "nope"}} {
		if _, _, err := help(bad...); exitCode(err) != 2 {
			t.Errorf("feedd help %s: %v; want exit status 2", strings.Join(bad, " "), err)
		}
	}
}

// TestVersion: `feedd version` prints the module version and VCS
// revision (version()), and takes no argument.
func TestVersion(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"version"}, func(string) string { return "" }, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "feedd "+version()+" go") {
		t.Errorf("feedd version printed %q; want feedd %s and the Go version", out.String(), version())
	}
	if err := run(t.Context(), []string{"version", "extra"}, func(string) string { return "" }, nil, io.Discard, io.Discard); exitCode(err) != 2 {
		t.Errorf("feedd version extra: %v; want exit status 2", err)
	}
}

// TestRunReadsStdin: run hands its stdin to the commands that read one
// (feedd import --users -), not the process's.
func TestRunReadsStdin(t *testing.T) {
	var out, errs strings.Builder
	env := map[string]string{"FEEDD_DATA_DIR": t.TempDir()}
	err := run(t.Context(), []string{"import", "--users", "-"}, func(k string) string { return env[k] }, strings.NewReader(`{"id":"1","name":"ann"}`+"\n"), &out, &errs)
	if err != nil || !strings.Contains(out.String(), "users") {
		t.Fatalf("feedd import --users - with one user on stdin: %v; stdout:\n%s\nstderr:\n%s", err, out.String(), errs.String())
	}
}
