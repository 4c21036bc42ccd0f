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
