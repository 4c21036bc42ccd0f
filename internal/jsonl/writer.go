package jsonl

import (
	"bufio"
	"encoding/json"
	"io"
)

// Writer writes lines through a buffer: Flush sends them on.
type Writer struct {
	buf *bufio.Writer
	enc *json.Encoder
}

// NewWriter returns a Writer to w with a buffer of size bytes.
func NewWriter(w io.Writer, size int) *Writer {
	buf := bufio.NewWriterSize(w, size)
	enc := json.NewEncoder(buf)
	// Content and names go out as stored, not with <, > and & escaped.
	enc.SetEscapeHTML(false)
	return &Writer{buf: buf, enc: enc}
}

// Write writes one line: v is one of the line types.
func (w *Writer) Write(v any) error { return w.enc.Encode(v) }

// Flush writes what is buffered to the underlying writer.
func (w *Writer) Flush() error { return w.buf.Flush() }
