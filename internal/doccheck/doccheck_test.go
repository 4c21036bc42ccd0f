package doccheck

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// markdownFiles returns every .md file of the repository, relative to
// root, leaving out hidden directories and test data.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"README.md", filepath.Join("docs", "design.md")} {
		found := false
		for _, f := range files {
			found = found || f == must
		}
		if !found {
			t.Fatalf("markdown files %v lack %s", files, must)
		}
	}
	return files
}

// line is one line of a Markdown file outside fenced code blocks, with
// inline code spans blanked out, so that neither counts as a link or a
// heading.
type line struct {
	n    int
	text string
}

var codeSpan = regexp.MustCompile("`+[^`]*`+")

func prose(t *testing.T, file string) []line {
	t.Helper()
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out   []line
		fence string
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		trimmed := strings.TrimLeft(text, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		out = append(out, line{n: n, text: text})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var heading = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)

// inlineLink matches [text](target) and [text](target "title"); the text
// may hold code spans and brackets one level deep.
var inlineLink = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// anchors returns the fragment ids GitHub gives the headings of file.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(t, file) {
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		id := slug(m[2])
		if k := seen[id]; k > 0 {
			seen[id]++
			id = fmt.Sprintf("%s-%d", id, k)
		} else {
			seen[id] = 1
		}
		ids[id] = true
	}
	return ids
}

var (
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	emphasis = regexp.MustCompile(`[*]+`)
	htmlTag  = regexp.MustCompile(`<[^>]+>`)
)

// slug is GitHub's heading id: the heading's text, lower-cased, with
// every character other than a letter, a digit, a space, '-' or '_'
// dropped and the spaces turned into '-'.
func slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	h = strings.ReplaceAll(h, "`", "")
	h = emphasis.ReplaceAllString(h, "")
	h = htmlTag.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestSlug pins the heading ids the link check relies on.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Roles, and running on MySQL, Redis and RabbitMQ": "roles-and-running-on-mysql-redis-and-rabbitmq",
		"Degradation switches L1–L4":                      "degradation-switches-l1l4",
		"Push, pull and hybrid":                           "push-pull-and-hybrid",
		"`feedd bench` and *its* [report](x.md)":          "feedd-bench-and-its-report",
		"What the run shows":                              "what-the-run-shows",
		"FEEDD_INBOX_MAX":                                 "feedd_inbox_max",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q; want %q", h, got, want)
		}
	}
}

// TestLinks: every relative link of every Markdown file names a file or
// directory that exists, and its #fragment, if any, a heading of that
// Markdown file.
func TestLinks(t *testing.T) {
	files := markdownFiles(t)
	cache := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := cache[file]; ok {
			return a
		}
		a := anchors(t, file)
		cache[file] = a
		return a
	}
	checked := 0
	for _, file := range files {
		for _, l := range prose(t, file) {
			text := codeSpan.ReplaceAllString(l.text, "")
			for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", file, l.n, target, filepath.ToSlash(dest))
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %q: a fragment into %s, which is not Markdown", file, l.n, target, dest)
					continue
				}
				if !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", file, l.n, target, filepath.ToSlash(dest), frag)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d relative links in %v; the parser is missing some", checked, files)
	}
}

// privateCitation matches a citation of a document no reader of the
// repository can open: the design notes the project was built from, or an
// issue by number.
var privateCitation = regexp.MustCompile(`(?i)\b(design )?notes? 00\d\b|\bissue \d+\b|\bseeds/`)

// TestNoPrivateCitations: the documentation says the idea, and never
// cites a design note or an issue by its number.
func TestNoPrivateCitations(t *testing.T) {
	for _, file := range markdownFiles(t) {
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(raw), "\n") {
			if m := privateCitation.FindString(l); m != "" {
				t.Errorf("%s:%d: cites %q, which a reader of the repository cannot open: say the idea instead", file, i+1, m)
			}
		}
	}
}
