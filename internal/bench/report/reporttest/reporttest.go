// Package reporttest checks a bench report's JSON against the schema
// docs/BENCH.md documents: for the report's own tests, on a sample, and
// for the end-to-end tests of feedd bench, on a real run's figures.
package reporttest

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// DocumentedPaths returns the JSON paths of the schema table in
// docs/BENCH.md: the rows of section "The JSON" that start with a
// backquoted path.
func DocumentedPaths(doc string) []string {
	_, doc, _ = strings.Cut(doc, "\n## The JSON\n")
	doc, _, _ = strings.Cut(doc, "\n## ")
	re := regexp.MustCompile("(?m)^\\| `([a-z_<>.\\[\\]0-9]+)`")
	var out []string
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// Lookup walks a dotted path, replacing placeholders such as <model>
// with subs; [] takes the first element of an array.
func Lookup(tree map[string]any, path string, subs map[string]string) (any, bool) {
	var cur any = tree
	for _, part := range strings.Split(path, ".") {
		arr := strings.HasSuffix(part, "[]")
		part = strings.TrimSuffix(part, "[]")
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok := subs[part]; ok {
			part = v
		} else if strings.HasPrefix(part, "<") {
			// Any key will do, but there must be one.
			keys := slices.Sorted(maps.Keys(obj))
			if len(keys) == 0 {
				return nil, false
			}
			part = keys[0]
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
		if arr {
			a, ok := cur.([]any)
			if !ok || len(a) == 0 {
				return nil, false
			}
			cur = a[0]
		}
	}
	return cur, true
}
