package main

import "runtime/debug"

// version is what the binary was built from, for the ops console's list of
// processes: the module version (a tag when built by `go install
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
