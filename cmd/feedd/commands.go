package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// commandFlags is the flag set of a command (bench, import, export,
// requeue-dead). A setting shared with the roles (a DSN, a broker URL)
// reads the same FEEDD_<NAME> as the roles, so that a command run beside a
// deployment finds what the deployment uses; bench's own knobs read
// FEEDD_BENCH_<NAME>. A flag wins over its variable. Flags with no
// variable are declared on fs directly.
type commandFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error // variables that did not parse, reported by parse
}

// newCommandFlags is the flag set of a command named as typed ("feedd
// import", "feedd bench run"), writing its usage and errors to stderr.
func newCommandFlags(command string, getenv func(string) string, stderr io.Writer) *commandFlags {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &commandFlags{fs: fs, getenv: getenv}
}

func envName(name string, shared bool) string {
	prefix := "FEEDD_BENCH_"
	if shared {
		prefix = "FEEDD_"
	}
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func (c *commandFlags) str(p *string, name, def string, shared bool, usage string) {
	env := envName(name, shared)
	if v := c.getenv(env); v != "" {
		def = v
	}
	c.fs.StringVar(p, name, def, usage+" ("+env+")")
}

func (c *commandFlags) num(p *int, name string, def int, shared bool, usage string) {
	env := envName(name, shared)
	c.fs.IntVar(p, name, envDefault(c, env, def, strconv.Atoi, "an integer"), usage+" ("+env+")")
}

func (c *commandFlags) float(p *float64, name string, def float64, usage string) {
	env := envName(name, false)
	parse := func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }
	c.fs.Float64Var(p, name, envDefault(c, env, def, parse, "a number"), usage+" ("+env+")")
}

func (c *commandFlags) dur(p *time.Duration, name string, def time.Duration, usage string) {
	env := envName(name, false)
	c.fs.DurationVar(p, name, envDefault(c, env, def, time.ParseDuration, "a duration like 10s"), usage+" ("+env+")")
}

func (c *commandFlags) boolean(p *bool, name string, def bool, usage string) {
	env := envName(name, false)
	c.fs.BoolVar(p, name, envDefault(c, env, def, strconv.ParseBool, "a boolean"), usage+" ("+env+")")
}

// envDefault returns a flag's default: env's value parsed, or def when env
// is unset. A value that does not parse is an error of the command's
// (c.errs), described as what, and leaves def.
func envDefault[T any](c *commandFlags, env string, def T, parse func(string) (T, error), what string) T {
	v := c.getenv(env)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s=%q is not %s", env, v, what))
		return def
	}
	return x
}

// parse parses args with the secrets' defaults hidden from -h, since a
// default may be a variable's secret value: -h comes back as
// flag.ErrHelp, anything else wrong, or an argument left over, as a
// usageError.
func (c *commandFlags) parse(args []string) error {
	hideSecretDefaults(c.fs)
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if len(c.errs) > 0 {
		return usageError{errors.Join(c.errs...)}
	}
	if c.fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", strings.TrimPrefix(c.fs.Name(), "feedd "), c.fs.Arg(0))}
	}
	return nil
}
