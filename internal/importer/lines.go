package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/feedd/feedd/internal/feed"
)

// maxLine bounds one line: a post's content (5,000 characters, up to 4
// bytes each) and data (16 KiB) with their JSON escapes fit many times.
const maxLine = 1 << 20

// lineReader reads a JSON Lines stream a line at a time, counting lines,
// in constant memory: a line longer than maxLine is skipped, not held.
type lineReader struct {
	r    *bufio.Reader
	n    int // the number of the line last returned
	buf  []byte
	long bool // the line last returned was longer than maxLine
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next line without its end of line, or io.EOF. The
// slice is valid until the next call. A line over maxLine comes back
// empty with long set.
func (l *lineReader) next() ([]byte, error) {
	l.buf, l.long = l.buf[:0], false
	for {
		part, err := l.r.ReadSlice('\n')
		if !l.long {
			if len(l.buf)+len(part) > maxLine {
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

// id is a user id as the files carry it: a decimal string, as in the API
// ("42"), or a JSON number.
type id int64

func (i *id) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return errors.New("not a string")
		}
	}
	v, err := feed.ParseID(s)
	if err != nil {
		return idError{fmt.Sprintf("%s is not a user id (a positive integer, in a string)", b)}
	}
	*i = id(v)
	return nil
}

// idError is a value that is not an id; its message is the whole reason.
type idError struct{ msg string }

func (e idError) Error() string { return e.msg }

// decode parses one line into v, with a reason a person can act on.
func decode(line []byte, v any) error {
	if err := json.Unmarshal(line, v); err != nil {
		var ute *json.UnmarshalTypeError
		var ide idError
		switch {
		case errors.As(err, &ide):
			return ide
		case errors.As(err, &ute) && ute.Field != "":
			return fmt.Errorf("field %q: want %s, got JSON %s", ute.Field, ute.Type, ute.Value)
		case errors.As(err, &ute):
			return fmt.Errorf("want a JSON object, got JSON %s", ute.Value)
		}
		return fmt.Errorf("malformed JSON: %v", err)
	}
	return nil
}
