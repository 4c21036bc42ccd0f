//go:build unix

package load

import (
	"fmt"
	"syscall"
)

// raiseOpenFiles lifts the soft limit on open files to the hard one and
// fails when that is below want. The Go runtime lifts it too, but puts
// the old one back for the processes it starts; setting it here is what
// lets the feedd children (which lift their own as well) inherit it.
func raiseOpenFiles(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Max < want {
		return fmt.Errorf("the open-file limit's hard maximum is %d, below the %d needed: raise it (ulimit -Hn, or LimitNOFILE= in a systemd unit)", lim.Max, want)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
	}
	return nil
}
