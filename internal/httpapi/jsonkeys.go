package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/feedd/feedd/internal/feed"
)

// checkKeys is what encoding/json does not check in a request body: that
// no object, at any depth, holds a key twice (encoding/json keeps the last,
// so a proxy or a log that keeps the first sees another request), that a
// struct's fields are named exactly (encoding/json matches them without
// regard to case), and that no string holds an unpaired UTF-16 surrogate
// escape such as "\ud800" (encoding/json turns it into U+FFFD, as it does
// invalid UTF-8). I-JSON (RFC 7493) forbids all three.
//
// body is one JSON value that encoding/json has already accepted into a
// value of the type s describes, so the walk only looks for keys: one pass
// over the bytes, with no allocation for an object of a few keys.
func checkKeys(body []byte, s *keySchema) error {
	sc := keyScanner{b: body}
	return sc.value(s)
}

type keyScanner struct {
	b []byte
	i int
}

func (sc *keyScanner) value(s *keySchema) error {
	sc.space()
	if sc.i >= len(sc.b) {
		return errBadJSON
	}
	switch sc.b[sc.i] {
	case '{':
		return sc.object(s)
	case '[':
		return sc.array(s)
	case '"':
		_, _, err := sc.str()
		return err
	default: // a number, true, false or null
		for ; sc.i < len(sc.b); sc.i++ {
			switch sc.b[sc.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return nil
			}
		}
		return nil
	}
}

// smallObject is how many keys an object may have before its duplicate
// check moves from comparing with each key seen to a map.
const smallObject = 16

func (sc *keyScanner) object(s *keySchema) error {
	sc.i++ // {
	if sc.space(); sc.at('}') {
		sc.i++
		return nil
	}
	var (
		small [smallObject][]byte
		keys  = small[:0]
		many  map[string]bool
	)
	for {
		sc.space()
		key, escaped, err := sc.str()
		if err != nil {
			return err
		}
		if escaped {
			var k string
			if json.Unmarshal(key, &k) != nil {
				return errBadJSON
			}
			key = []byte(k)
		} else {
			key = key[1 : len(key)-1]
		}
		switch {
		case many != nil:
			if many[string(key)] {
				return duplicateKey(key)
			}
			many[string(key)] = true
		case len(keys) < smallObject:
			for _, k := range keys {
				if bytes.Equal(k, key) {
					return duplicateKey(key)
				}
			}
			keys = append(keys, key)
		default:
			many = make(map[string]bool, 2*smallObject)
			for _, k := range keys {
				many[string(k)] = true
			}
			if many[string(key)] {
				return duplicateKey(key)
			}
			many[string(key)] = true
		}
		child := s.elemOf()
		if s != nil && s.fields != nil {
			f, ok := s.fields[string(key)]
			if !ok {
				// encoding/json took it for a field whose name differs
				// only in case (unknown names it refused already).
				return feed.Errorf(feed.EINVALID, "the request body is not valid: unknown field %q (field names are case-sensitive)", key)
			}
			child = f
		}
		if sc.space(); !sc.at(':') {
			return errBadJSON
		}
		sc.i++
		if err := sc.value(child); err != nil {
			return err
		}
		sc.space()
		switch {
		case sc.at(','):
			sc.i++
		case sc.at('}'):
			sc.i++
			return nil
		default:
			return errBadJSON
		}
	}
}

func (sc *keyScanner) array(s *keySchema) error {
	sc.i++ // [
	if sc.space(); sc.at(']') {
		sc.i++
		return nil
	}
	for {
		if err := sc.value(s.elemOf()); err != nil {
			return err
		}
		sc.space()
		switch {
		case sc.at(','):
			sc.i++
		case sc.at(']'):
			sc.i++
			return nil
		default:
			return errBadJSON
		}
	}
}

// str moves past the string at sc.i and returns it with its quotes, and
// whether it holds an escape.
func (sc *keyScanner) str() (raw []byte, escaped bool, err error) {
	if !sc.at('"') {
		return nil, false, errBadJSON
	}
	start := sc.i
	sc.i++
	// Most strings hold no escape: find their end with IndexByte's
	// vectorised search instead of a loop over every byte.
	if end := bytes.IndexByte(sc.b[sc.i:], '"'); end >= 0 && bytes.IndexByte(sc.b[sc.i:sc.i+end], '\\') < 0 {
		sc.i += end + 1
		return sc.b[start:sc.i], false, nil
	}
	pendingHigh := false // the last escape was a high surrogate
	for sc.i < len(sc.b) {
		c := sc.b[sc.i]
		switch {
		case c == '"':
			if pendingHigh {
				return nil, false, errSurrogate
			}
			sc.i++
			return sc.b[start:sc.i], escaped, nil
		case c == '\\' && sc.i+1 < len(sc.b):
			escaped = true
			if sc.b[sc.i+1] != 'u' {
				if pendingHigh {
					return nil, false, errSurrogate
				}
				sc.i += 2
				continue
			}
			if sc.i+6 > len(sc.b) {
				return nil, false, errBadJSON
			}
			r := hex4(sc.b[sc.i+2 : sc.i+6])
			switch {
			case r >= 0xd800 && r < 0xdc00: // high
				if pendingHigh {
					return nil, false, errSurrogate
				}
				pendingHigh = true
			case r >= 0xdc00 && r < 0xe000: // low
				if !pendingHigh {
					return nil, false, errSurrogate
				}
				pendingHigh = false
			default:
				if pendingHigh {
					return nil, false, errSurrogate
				}
			}
			sc.i += 6
		default:
			if pendingHigh {
				return nil, false, errSurrogate
			}
			sc.i++
		}
	}
	return nil, false, errBadJSON
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return -1
		}
	}
	return r
}

func (sc *keyScanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\r', '\n':
			sc.i++
		default:
			return
		}
	}
}

func (sc *keyScanner) at(c byte) bool { return sc.i < len(sc.b) && sc.b[sc.i] == c }

func duplicateKey(key []byte) error {
	return feed.Errorf(feed.EINVALID, "the request body is not valid: key %q appears twice in one object", key)
}

var (
	// errBadJSON cannot happen after encoding/json accepted the body; it
	// keeps the walk total should the two ever disagree.
	errBadJSON   = feed.Errorf(feed.EINVALID, "the request body is not valid JSON")
	errSurrogate = feed.Errorf(feed.EINVALID, "the request body has a string with an unpaired surrogate escape (such as \\ud800): send valid Unicode")
)

// keySchema is what checkKeys knows of the Go type a JSON value decodes
// into: for a struct, its fields by exact JSON name; for a slice, array or
// map, its element's schema. A nil *keySchema is a value of any shape (an
// interface, json.RawMessage, a type with its own UnmarshalJSON), whose
// objects are checked for duplicate keys only.
type keySchema struct {
	fields map[string]*keySchema // non-nil for a struct
	elem   *keySchema
}

func (s *keySchema) elemOf() *keySchema {
	if s == nil {
		return nil
	}
	return s.elem
}

// keySchemas caches schemaOf: a type's schema never changes.
var keySchemas sync.Map // reflect.Type → *keySchema

func schemaOf(t reflect.Type) *keySchema {
	if s, ok := keySchemas.Load(t); ok {
		return s.(*keySchema)
	}
	s := buildSchema(t, map[reflect.Type]*keySchema{})
	keySchemas.Store(t, s)
	return s
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// buildSchema follows encoding/json's rules for the names it matches:
// the json tag's name, else the field's; "-" skipped; unexported fields
// skipped; an embedded struct's fields promoted.
func buildSchema(t reflect.Type, building map[reflect.Type]*keySchema) *keySchema {
	if s, ok := building[t]; ok { // a recursive type
		return s
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return buildSchema(t.Elem(), building)
	case reflect.Slice, reflect.Array, reflect.Map:
		s := &keySchema{}
		building[t] = s
		s.elem = buildSchema(t.Elem(), building)
		return s
	case reflect.Struct:
		s := &keySchema{fields: map[string]*keySchema{}}
		building[t] = s
		addFields(s, t, building)
		return s
	default:
		return nil
	}
}

func addFields(s *keySchema, t reflect.Type, building map[reflect.Type]*keySchema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, building)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = buildSchema(f.Type, building)
	}
}
