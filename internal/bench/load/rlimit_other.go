//go:build !unix

package load

// raiseOpenFiles has nothing to raise where there is no RLIMIT_NOFILE.
func raiseOpenFiles(uint64) error { return nil }
