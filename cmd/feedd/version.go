package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is what the binary was built from, for `feedd version` and the
// ops console's list of processes: the module version (a tag when built by `go install
// …@version`, "(devel)" in a checkout) and the VCS revision and its state,
// as `go version -m` shows them.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " (" + rev[:min(len(rev), 12)] + modified + ")"
	}
	return v
}

// runVersion is `feedd version`.
func runVersion(_ context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	f := newFlagSet("feedd version", getenv, stderr, "usage: feedd version\n\nPrints the module version (a tag when built by `go install …@version`, (devel) in a\ncheckout) and the VCS revision feedd was built from, +dirty if its files differed.\n")
	if err := f.parse(args); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "feedd %s %s\n", version(), runtime.Version())
	return err
}
