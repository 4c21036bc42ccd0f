package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/jsonl"
)

// formatError is a line that says the file is not what the import reads
// (an export given as a file of one kind, a kind no feedd writes): the
// run stops at it, as at a key the line's kind does not have.
type formatError struct{ msg string }

func (e *formatError) Error() string { return e.msg }

var kindKey = []byte(`"kind"`)

// admit says whether line is a row of src's pass. Every line of a file of
// one kind is, and must not say a kind; a line of an export is a row of
// the pass of its kind, and the pass of users, the first, refuses lines
// without a kind or of a kind no feedd writes.
func (r *run) admit(src Source, line []byte) (bool, error) {
	if !src.tagged {
		// Only a line that names "kind" somewhere is read twice.
		if !bytes.Contains(line, kindKey) {
			return true, nil
		}
		k, err := jsonl.Tagged(line)
		if err != nil || k == "" {
			return true, nil // the line's parse says what is wrong
		}
		return false, &formatError{fmt.Sprintf("a line of kind %q in a file of %s: %s looks like a feedd export; import it with --export %s", k, src.Kind, src.Name, src.Name)}
	}
	first := src.Kind == Kinds[0]
	k, err := jsonl.Tagged(line)
	switch {
	case err != nil && first:
		return true, err // reported once, by the first pass
	case err != nil:
		return false, nil
	case k == lineKinds[src.Kind]:
		return true, nil
	case !first:
		return false, nil
	case k == "":
		return false, &formatError{`a line without "kind" in an export: every line of an export says its kind`}
	case !slices.Contains(jsonl.Kinds, k):
		return false, &formatError{fmt.Sprintf("unknown kind %q", k)}
	}
	return false, nil
}

// notCarried counts, in the first pass over an export, a line of a kind
// that no pass imports (a profile that completed its user is carried).
func (r *run) notCarried(src Source, line []byte) {
	if !src.tagged || src.Kind != Kinds[0] {
		return
	}
	k, err := jsonl.Tagged(line)
	if err != nil {
		return
	}
	for _, carried := range lineKinds {
		if k == carried {
			return
		}
	}
	r.mu.Lock()
	r.sum.NotCarried[k]++
	r.mu.Unlock()
}

// profile completes the user before it in an export with the profile's
// creation time; its counts follow from the follows.
func (r *run) profile(last *feed.User, line []byte) (bool, error) {
	if k, err := jsonl.Tagged(line); err != nil || k != jsonl.Profile {
		return false, nil
	}
	var l jsonl.ProfileLine
	if err := jsonl.Decode(line, &l); err != nil {
		return false, err
	}
	if int64(l.UserID) != last.ID {
		return false, nil
	}
	at, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
	if err != nil || at.After(time.Now()) {
		return false, fmt.Errorf("profile of user %d: created_at %q is not an RFC 3339 time before now", l.UserID, l.CreatedAt)
	}
	last.CreatedAt = at.UTC()
	return true, nil
}

// rewindable returns sources with every export that cannot be rewound
// (standard input) copied to a temporary file, which closeSpooled removes.
func rewindable(sources []Source) ([]Source, error) {
	out := slices.Clone(sources)
	for i, src := range out {
		if src.Kind != Export {
			continue
		}
		// A pipe is an *os.File too, which cannot seek.
		if s, ok := src.R.(io.Seeker); ok {
			if _, err := s.Seek(0, io.SeekCurrent); err == nil {
				continue
			}
		}
		f, err := os.CreateTemp("", "feedd-import-*.jsonl")
		if err != nil {
			closeSpooled(out[:i])
			return nil, fmt.Errorf("importer: copy %s: %w", src.Name, err)
		}
		out[i].R = spooled{f}
		if _, err := io.Copy(f, src.R); err != nil {
			closeSpooled(out[:i+1])
			return nil, fmt.Errorf("importer: copy %s: %w", src.Name, err)
		}
	}
	return out, nil
}

// spooled is an export copied to a temporary file.
type spooled struct{ *os.File }

func closeSpooled(sources []Source) {
	for _, src := range sources {
		if f, ok := src.R.(spooled); ok {
			f.Close()
			os.Remove(f.Name())
		}
	}
}

// rewind takes an export back to its start for the next pass.
func rewind(src Source) error {
	s, ok := src.R.(io.Seeker)
	if !ok {
		return errors.New("importer: an export is read once per kind: its reader must be an io.Seeker")
	}
	if _, err := s.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("importer: rewind %s: %w", src.Name, err)
	}
	return nil
}
