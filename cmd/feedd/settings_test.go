package main

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSettingsTable: every row names its variable after its flag, says
// what it is for, sits in a concern help lists, is read by some role and
// takes its own default back.
func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range settings(&config{}) {
		if seen[o.name] {
			t.Errorf("setting %s declared twice", o.name)
		}
		seen[o.name] = true
		if o.env != envFor("FEEDD_", o.name) {
			t.Errorf("setting %s reads %s; want %s", o.name, o.env, envFor("FEEDD_", o.name))
		}
		if o.usage == "" || !slices.Contains(groups, o.group) || o.roles == 0 {
			t.Errorf("setting %s: usage %q, group %q, roles %b; want a usage, one of %q and a role", o.name, o.usage, o.group, o.roles, groups)
		}
		if def := o.get(); o.set(def) != nil || o.get() != def {
			t.Errorf("setting %s does not take its default %q back: %v", o.name, def, o.set(def))
		}
	}
}

// TestConfigurationDoc: docs/configuration.md documents every setting of
// the table, in the section of its concern, with its variable, its flag
// and its default, and documents nothing else.
func TestConfigurationDoc(t *testing.T) {
	f, err := os.Open("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct{ section, flag, def string }
	documented := map[string]row{}
	rowRE := regexp.MustCompile("^\\| `(FEEDD_[A-Z_]+)` \\| `-([a-z-]+)` \\|([^|]*)\\|")
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
		}
		if m := rowRE.FindStringSubmatch(line); m != nil {
			if _, dup := documented[m[1]]; dup {
				t.Errorf("%s is documented twice", m[1])
			}
			documented[m[1]] = row{section, m[2], strings.TrimSpace(m[3])}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, o := range settings(&config{}) {
		d, ok := documented[o.env]
		if !ok {
			t.Errorf("%s (-%s) is not documented", o.env, o.name)
			continue
		}
		delete(documented, o.env)
		if d.section != o.group || d.flag != o.name {
			t.Errorf("%s is documented as -%s under %q; want -%s under %q", o.env, d.flag, d.section, o.name, o.group)
		}
		// A default is a value in backticks, or words in place of an
		// empty one ("(off)", "generated").
		def := o.get()
		if v, ok := strings.CutPrefix(d.def, "`"); ok && strings.HasSuffix(v, "`") {
			v = strings.TrimSuffix(v, "`")
			if err := o.set(v); err != nil || o.get() != def {
				t.Errorf("%s's documented default %s reads as %q (%v); want %q", o.env, d.def, o.get(), err, def)
			}
		} else if def != "" {
			t.Errorf("%s's documented default %q; want `%s`", o.env, d.def, def)
		}
	}
	for env := range documented {
		t.Errorf("docs/configuration.md documents %s, which is no setting", env)
	}
}

// TestBadValueWording: a bad value is refused (exit status 2) in one
// wording, whether a flag or a variable gave it: where it came from, the
// value, and what it must be; a secret's value is never quoted.
func TestBadValueWording(t *testing.T) {
	blank := strings.Repeat(" ", minSecretLen)
	padded := " " + strings.Repeat("s", minSecretLen) + " "
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"a flag's integer", nil, []string{"-inbox-max", "many"}, `-inbox-max "many": want an integer`},
		{"a variable's integer", map[string]string{"FEEDD_INBOX_MAX": "many"}, nil, `FEEDD_INBOX_MAX="many": want an integer`},
		{"a flag's count", nil, []string{"serve", "-workers", "0"}, `-workers "0": want a positive integer`},
		{"a variable's count", map[string]string{"FEEDD_WORKERS": "0"}, []string{"work"}, `FEEDD_WORKERS="0": want a positive integer`},
		{"a command's variable", map[string]string{"FEEDD_INBOX_MAX": "0"}, []string{"import", "--users", "u"}, `FEEDD_INBOX_MAX="0": want a positive integer`},
		{"-log-level=verbose", nil, []string{"-log-level=verbose"}, `-log-level "verbose": want debug, info, warn or error`},
		{"FEEDD_LOG_LEVEL=verbose", map[string]string{"FEEDD_LOG_LEVEL": "verbose"}, []string{"migrate"}, `FEEDD_LOG_LEVEL="verbose": want debug, info, warn or error`},
		{"requeue-dead's FEEDD_LOG_LEVEL=verbose", map[string]string{"FEEDD_LOG_LEVEL": "verbose", "FEEDD_AMQP_URL": "amqp://x/"}, []string{"requeue-dead"}, `FEEDD_LOG_LEVEL="verbose"`},
		{"a blank FEEDD_ADMIN_TOKEN", map[string]string{"FEEDD_ADMIN_TOKEN": blank}, nil, "FEEDD_ADMIN_TOKEN: is blank"},
		{"a blank -admin-token", nil, []string{"-admin-token", blank}, "-admin-token: is blank"},
		{"a padded FEEDD_JWT_SECRET", map[string]string{"FEEDD_JWT_SECRET": padded}, []string{"serve"}, "FEEDD_JWT_SECRET: starts or ends with white space"},
		{"a blank secret for bench's children", map[string]string{"FEEDD_ADMIN_TOKEN": blank}, []string{"bench", "run"}, "FEEDD_ADMIN_TOKEN: is blank"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"FEEDD_DATA_DIR": t.TempDir()}
			for k, v := range c.env {
				env[k] = v
			}
			out, err := runOnce(t, env, c.args...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("exit status %d, error %v; want 2 and %q; output:\n%s", exitCode(err), err, c.want, out)
			}
			if strings.Contains(err.Error(), strings.Repeat("s", minSecretLen)) {
				t.Errorf("error %q quotes the secret", err)
			}
		})
	}
	// What slog reads is accepted, as it was.
	for _, level := range []string{"debug", "INFO", "warn", "error", "warn+2"} {
		if _, err := parseConfig([]string{"-log-level", level}, func(string) string { return "" }, io.Discard); err != nil {
			t.Errorf("-log-level %s: %v; want accepted", level, err)
		}
	}
}
