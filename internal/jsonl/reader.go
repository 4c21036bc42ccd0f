package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxLine bounds one line: a post's content (5,000 characters, up to 4
// bytes each) and data (16 KiB) with their JSON escapes fit many times.
const MaxLine = 1 << 20

// Reader reads a JSON Lines stream a line at a time, counting lines, in
// constant memory: a line longer than MaxLine is skipped, not held.
type Reader struct {
	r    *bufio.Reader
	n    int // the number of the line last returned
	buf  []byte
	long bool // the line last returned was longer than MaxLine
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Line is the number of the line Next returned last, from 1.
func (l *Reader) Line() int { return l.n }

// Long reports whether the line Next returned last was longer than
// MaxLine (and came back empty).
func (l *Reader) Long() bool { return l.long }

// Next returns the next line without its end of line, or io.EOF. The
// slice is valid until the next call. A line over MaxLine comes back
// empty with Long set.
func (l *Reader) Next() ([]byte, error) {
	l.buf, l.long = l.buf[:0], false
	for {
		part, err := l.r.ReadSlice('\n')
		if !l.long {
			if len(l.buf)+len(part) > MaxLine {
				l.long, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, part...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 && !l.long && len(part) == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		l.n++
		return bytes.TrimRight(l.buf, "\r\n"), nil
	}
}

// Blank reports whether line holds nothing but spaces and tabs: blank
// lines are allowed, and are no rows.
func Blank(line []byte) bool {
	return len(bytes.Trim(line, " \t")) == 0
}
