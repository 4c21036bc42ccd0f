package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
)

// How feedd reads a command line and its environment, one way for every
// role and command: a flag is an opt; the settings table (settings.go)
// makes the opts that roles and commands share, and a command declares
// its own with the same values. A flag wins over its variable, and a bad
// value is reported in one wording wherever it came from:
//
//	FEEDD_INBOX_MAX="many": want an integer
//	-inbox-max "0": want a positive integer

// opt is one flag: a setting of the table, or a command's own.
type opt struct {
	name   string     // the flag, without its dash
	env    string     // the variable also read ("": none)
	group  string     // the concern help lists it under ("": the command's own)
	usage  string     // what it is for, as help shows it
	secret secretKind // 0 when its value is not secret
	roles  roleSet    // for a setting: the roles that read it
	value
}

// value is how an opt's text becomes what it sets.
type value struct {
	typ string             // as help shows it: "string", "int", "duration", "float"; "" a boolean
	set func(string) error // parses and checks a text, then stores it
	get func() string      // the value now, as text
}

// kind is how a type is read from text and written back.
type kind[T any] struct {
	typ    string
	parse  func(string) (T, error)
	format func(T) string
}

var (
	textKind  = kind[string]{"string", func(s string) (string, error) { return s, nil }, func(s string) string { return s }}
	intKind   = kind[int]{"int", parseWith(strconv.Atoi, "want an integer"), strconv.Itoa}
	durKind   = kind[time.Duration]{"duration", parseWith(time.ParseDuration, "want a duration like 5s"), time.Duration.String}
	floatKind = kind[float64]{"float", parseWith(func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, "want a number"),
		func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }}
	boolKind = kind[bool]{"", parseWith(strconv.ParseBool, "want true or false"), strconv.FormatBool}
	ruleKind = kind[limit.Rule]{"string", parseRule, formatRule}
	modeKind = kind[feed.FanoutMode]{"string", parseWith(feed.ParseFanoutMode, "want push, pull or hybrid"), func(m feed.FanoutMode) string { return string(m) }}
)

// parseWith is parse with its error replaced by want: what a value must
// look like, the same words for a flag and a variable.
func parseWith[T any](parse func(string) (T, error), want string) func(string) (T, error) {
	return func(s string) (T, error) {
		x, err := parse(s)
		if err != nil {
			return x, errors.New(want)
		}
		return x, nil
	}
}

// bind is the value stored in p, def until a variable or flag sets it,
// and accepted only if every check passes.
func bind[T any](k kind[T], p *T, def T, checks ...func(T) error) value {
	*p = def
	return value{
		typ: k.typ,
		set: func(s string) error {
			x, err := k.parse(s)
			if err != nil {
				return err
			}
			for _, check := range checks {
				if err := check(x); err != nil {
					return err
				}
			}
			*p = x
			return nil
		},
		get: func() string { return k.format(*p) },
	}
}

// The checks of the settings and flags.

func positive(n int) error {
	if n <= 0 {
		return errors.New("want a positive integer")
	}
	return nil
}

func positiveDur(d time.Duration) error {
	if d <= 0 {
		return errors.New("want a positive duration")
	}
	return nil
}

func notNegative[T int | time.Duration](x T) error {
	if x < 0 {
		return errors.New("want 0 or more")
	}
	return nil
}

func between(least, most int) func(int) error {
	return func(n int) error {
		if n < least || n > most {
			return fmt.Errorf("want an integer from %d to %d", least, most)
		}
		return nil
	}
}

func nonNegativeNumber(x float64) error {
	if !(x >= 0) || math.IsInf(x, 1) {
		return errors.New("want a number, 0 or more")
	}
	return nil
}

func atLeast[T int | time.Duration](least T, unit string) func(T) error {
	return func(x T) error {
		if x < least {
			return fmt.Errorf("want at least %v%s", least, unit)
		}
		return nil
	}
}

func oneOf(want ...string) func(string) error {
	return func(s string) error {
		for _, w := range want {
			if s == w {
				return nil
			}
		}
		return fmt.Errorf("want %s or %s", strings.Join(want[:len(want)-1], ", "), want[len(want)-1])
	}
}

// flagSet is the flags of one role or command.
type flagSet struct {
	name      string // as typed: "feedd serve", "feedd bench run"
	getenv    func(string) string
	stderr    io.Writer
	head      string // help's first lines: how to call it, what it does
	envPrefix string // the variables of its own flags: prefix + NAME ("": none)
	opts      []*opt
	show      func(*opt) bool   // which settings help lists (nil: all)
	changed   map[string]bool   // the flags the command line set
	shown     map[string]string // the defaults help shows: a variable's value when set
}

func newFlagSet(name string, getenv func(string) string, stderr io.Writer, head string) *flagSet {
	return &flagSet{name: name, getenv: getenv, stderr: stderr, head: head, changed: map[string]bool{}}
}

// envFor is the variable a setting or flag named name reads: prefix and
// the name upper-cased, dashes as underscores.
func envFor(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// own declares a flag of the command's own, reading the variable of
// f.envPrefix if it has one.
func (f *flagSet) own(name, usage string, v value) {
	o := &opt{name: name, usage: usage, value: v}
	if f.envPrefix != "" {
		o.env = envFor(f.envPrefix, name)
	}
	f.opts = append(f.opts, o)
}

func (f *flagSet) str(p *string, name, def, usage string) { f.own(name, usage, bind(textKind, p, def)) }
func (f *flagSet) num(p *int, name string, def int, usage string) {
	f.own(name, usage, bind(intKind, p, def))
}
func (f *flagSet) dur(p *time.Duration, name string, def time.Duration, usage string) {
	f.own(name, usage, bind(durKind, p, def))
}
func (f *flagSet) float(p *float64, name string, def float64, usage string) {
	f.own(name, usage, bind(floatKind, p, def))
}
func (f *flagSet) boolean(p *bool, name string, def bool, usage string) {
	f.own(name, usage, bind(boolKind, p, def))
}

// settings declares the settings of the table named, stored in c; every
// one for a role (names empty).
func (f *flagSet) settings(c *config, names ...string) {
	table := settings(c)
	if len(names) == 0 {
		f.opts = append(f.opts, table...)
		return
	}
	for _, name := range names {
		f.opts = append(f.opts, lookup(table, name))
	}
}

// reword gives a setting a command's own usage, where the command reads
// it with a meaning of its own.
func (f *flagSet) reword(name, usage string) { lookup(f.opts, name).usage = usage }

func lookup(opts []*opt, name string) *opt {
	for _, o := range opts {
		if o.name == name {
			return o
		}
	}
	panic("feedd: no setting " + name) // a typo in a command's declaration
}

// parse reads the variables, then args: -h comes back as flag.ErrHelp
// after help is printed, anything else wrong, or an argument left over,
// as a usageError.
func (f *flagSet) parse(args []string) error {
	fs := flag.NewFlagSet(f.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var errs []error
	f.shown = map[string]string{}
	for _, o := range f.opts {
		if v := ""; o.env != "" {
			if v = f.getenv(o.env); v != "" {
				if err := o.set(v); err != nil {
					errs = append(errs, badValue(o, o.env, "=", v, err))
				}
			}
		}
		f.shown[o.name] = o.get()
		fs.Var(flagValue{o, f, &errs}, o.name, o.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.help(f.stderr)
			return err
		}
		return usageError{err}
	}
	if len(errs) > 0 {
		return usageError{errors.Join(errs...)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", strings.TrimPrefix(f.name, "feedd "), fs.Arg(0))}
	}
	return nil
}

// badValue is the one wording of a bad value: where it came from, the
// value (a secret's hidden), and what it must be.
func badValue(o *opt, from, sep, v string, err error) error {
	if o.secret == wholeSecret {
		return fmt.Errorf("%s: %w", from, err)
	}
	if o.secret != 0 {
		v = showSecret(o.secret, v)
	}
	return fmt.Errorf("%s%s%q: %w", from, sep, v, err)
}

// flagValue is an opt as the flag package sees it. A bad value is
// collected, not returned, so that the flag package adds no wording of
// its own.
type flagValue struct {
	o    *opt
	f    *flagSet
	errs *[]error
}

func (v flagValue) String() string {
	if v.o == nil {
		return ""
	}
	return v.o.get()
}

func (v flagValue) Set(s string) error {
	v.f.changed[v.o.name] = true
	if err := v.o.set(s); err != nil {
		*v.errs = append(*v.errs, badValue(v.o, "-"+v.o.name, " ", s, err))
	}
	return nil
}

func (v flagValue) IsBoolFlag() bool { return v.o.typ == "" }

// help writes f's help: its head, its own flags, then the settings it
// reads by concern, each with its variable and its default (shown:
// the variable's value when set; a secret's hidden).
func (f *flagSet) help(w io.Writer) {
	var b strings.Builder
	b.WriteString(f.head)
	write := func(title string, opts []*opt) {
		if len(opts) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s:\n", title)
		for _, o := range opts {
			writeOpt(&b, o, f.shown[o.name])
		}
	}
	var own []*opt
	for _, o := range f.opts {
		if o.group == "" {
			own = append(own, o)
		}
	}
	write("flags", own)
	for i, g := range groups {
		var in []*opt
		for _, o := range f.opts {
			if o.group == g && (f.show == nil || f.show(o)) {
				in = append(in, o)
			}
		}
		if i == 0 && len(f.opts) > len(own) {
			b.WriteString("\nsettings, by concern (each also read from the environment variable in brackets; a flag wins over it):\n")
		}
		write(g, in)
	}
	io.WriteString(w, b.String())
}

// writeOpt writes o as the flag package's PrintDefaults does.
func writeOpt(b *strings.Builder, o *opt, def string) {
	fmt.Fprintf(b, "  -%s", o.name)
	if o.typ != "" {
		fmt.Fprintf(b, " %s", o.typ)
	}
	b.WriteString("\n    \t" + strings.ReplaceAll(o.usage, "\n", "\n    \t"))
	if o.env != "" {
		fmt.Fprintf(b, " (%s)", o.env)
	}
	if o.secret != 0 {
		def = showSecret(o.secret, def)
	}
	switch {
	case def == "" || o.typ != "string" && (def == "0" || def == "0s" || def == "false"):
	case o.typ == "string":
		fmt.Fprintf(b, " (default %q)", def)
	default:
		fmt.Fprintf(b, " (default %s)", def)
	}
	b.WriteString("\n")
}
