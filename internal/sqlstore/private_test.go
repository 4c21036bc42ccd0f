package sqlstore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSQLiteFilesPrivate: the database and its -wal and -shm files are
// 0600 whatever the umask, and an existing file left readable by others
// (by an older feedd) is tightened when opened.
func TestSQLiteFilesPrivate(t *testing.T) {
	// The umask is the process's: this test is not parallel, so no other
	// test runs meanwhile.
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	check := func(t *testing.T, path string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("stat %s: %v (want it to exist while the store is open, in WAL mode)", p, err)
			}
			if got := fi.Mode().Perm(); got != 0o600 {
				t.Errorf("%s has mode %#o; want 0600", filepath.Base(p), got)
			}
		}
	}

	t.Run("created", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "feedd.db")
		s, err := OpenSQLite(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		check(t, path)
	})

	t.Run("existing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "feedd.db")
		s, err := OpenSQLite(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if s, err = OpenSQLite(t.Context(), path); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		check(t, path)
	})
}
