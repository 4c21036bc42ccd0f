package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// sharedSetting returns a declarer of flags on fs for settings a command
// shares with the roles (a DSN, a broker URL): the same flag, read from the
// same FEEDD_ variable, a flag winning, so that a command run beside a
// deployment finds what the deployment uses.
func sharedSetting(fs *flag.FlagSet, getenv func(string) string) func(name, def, usage string) *string {
	return func(name, def, usage string) *string {
		env := envName(name, true)
		if v := getenv(env); v != "" {
			def = v
		}
		return fs.String(name, def, usage+" ("+env+")")
	}
}

// parseCommand parses a command's flags with the secrets' defaults hidden
// from its -h: -h comes back as flag.ErrHelp, anything else wrong, or an
// argument left over, as a usageError.
func parseCommand(fs *flag.FlagSet, args []string) error {
	hideSecretDefaults(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", strings.TrimPrefix(fs.Name(), "feedd "), fs.Arg(0))}
	}
	return nil
}
