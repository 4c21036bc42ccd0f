package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
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
		if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &KeyError{Key: strings.Trim(key, `"`)}
		}
		return fmt.Errorf("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("malformed JSON: data after the object")
	}
	return checkKeys(line, keysOf(reflect.TypeOf(v)))
}

// checkKeys is what encoding/json leaves unchecked in a line it accepted:
// that every key is named exactly (it matches keys to fields whatever
// their case) and appears once (it keeps the last).
func checkKeys(line []byte, names map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil { // {
		return fmt.Errorf("malformed JSON: %v", err)
	}
	var seen []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("malformed JSON: %v", err)
		}
		key, _ := t.(string)
		switch {
		case !names[key]:
			return &KeyError{Key: key}
		case contains(seen, key):
			return &KeyError{Key: key, Twice: true}
		}
		seen = append(seen, key)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("malformed JSON: %v", err)
		}
	}
	return nil
}

func contains(keys []string, k string) bool {
	for _, s := range keys {
		if s == k {
			return true
		}
	}
	return false
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
