package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// KeyError is a line with a key its kind does not have (or has twice):
// a typo, or something feedd does not carry. A reader must refuse the
// line rather than drop the key, which would lose its value without a
// word: the API refuses such keys too.
type KeyError struct {
	Key string
	// Twice says the key appears twice, rather than is unknown.
	Twice bool
}

func (e *KeyError) Error() string {
	if e.Twice {
		return fmt.Sprintf("key %q appears twice", e.Key)
	}
	return fmt.Sprintf("unknown key %q (keys are case-sensitive)", e.Key)
}

// Decode parses one line into v, a pointer to one of the line types,
// strictly: one JSON object, of the kind's keys only (named exactly, each
// once), with values of their types. Its error is a reason a person can
// act on; a key the kind does not have is a *KeyError.
func Decode(line []byte, v any) error {
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
	return checkKeys(line, keysOf(reflect.TypeOf(v)))
}

// checkKeys is what encoding/json leaves unchecked in a line it accepted
// (one JSON object, whose values it has checked): that every key is one
// of names, named exactly (it matches keys to fields whatever their case,
// and skips the others), and appears once (it keeps the last). One pass
// over the bytes, without allocating for a line without escapes in its
// keys: the import reads millions of lines.
func checkKeys(line []byte, names map[string]bool) error {
	var seen [8][]byte
	keys := seen[:0]
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return fmt.Errorf("want a JSON object, got JSON %s", bytes.TrimSpace(line))
	}
	i++
	for {
		i = skipSpace(line, i)
		if i >= len(line) || line[i] == '}' {
			return nil
		}
		end := stringEnd(line, i)
		key := line[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(line[i:end], &k) != nil {
				return errors.New("malformed JSON: a key is no string")
			}
			key = []byte(k)
		}
		if !names[string(key)] {
			return &KeyError{Key: string(key)}
		}
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return &KeyError{Key: string(key), Twice: true}
			}
		}
		keys = append(keys, key)
		i = skipValue(line, skipSpace(line, end)+1) // past :
		i = skipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value that starts at or after
// b[i]: a string, an object or array (whatever it holds), or a literal.
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the line's object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// lineKeys caches keysOf: a type's keys never change.
var lineKeys sync.Map // reflect.Type → map[string]bool

// keysOf returns the JSON keys of the struct t points to.
func keysOf(t reflect.Type) map[string]bool {
	if k, ok := lineKeys.Load(t); ok {
		return k.(map[string]bool)
	}
	st := t.Elem()
	keys := map[string]bool{}
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	lineKeys.Store(t, keys)
	return keys
}

// Tagged returns the kind a line says it is ("" when it has no "kind"),
// without decoding the rest; an error if the line is no JSON object or
// its kind is no string.
func Tagged(line []byte) (Kind, error) {
	var k struct {
		Kind *Kind `json:"kind"`
	}
	if err := json.Unmarshal(line, &k); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field == "kind" {
			return "", fmt.Errorf(`field "kind": want a string, got JSON %s`, ute.Value)
		}
		if errors.As(err, &ute) {
			return "", fmt.Errorf("want a JSON object, got JSON %s", ute.Value)
		}
		return "", fmt.Errorf("malformed JSON: %v", err)
	}
	if k.Kind == nil {
		return "", nil
	}
	if *k.Kind == "" {
		return "", errors.New(`"kind" is empty`)
	}
	return *k.Kind, nil
}
