package webapp

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func newHandler(t *testing.T) *Handler {
	t.Helper()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	for _, p := range h.(*Handler).Patterns() {
		mux.Handle(p, h)
	}
	mux.ServeHTTP(w, r)
	return w
}

// Every page and asset carries the security headers; the app's page
// answers each of its routes, so deep links and reloads work.
func TestPagesAndHeaders(t *testing.T) {
	h := newHandler(t)
	for path, want := range map[string]string{
		"/":                 `<script type="module" src="/assets/app.js">`,
		"/top":              `<script type="module" src="/assets/app.js">`,
		"/users/42":         `<script type="module" src="/assets/app.js">`,
		"/posts/7":          `<script type="module" src="/assets/app.js">`,
		"/ops":              `<script type="module" src="/assets/ops.js">`,
		"/assets/app.js":    `import { homeView } from './home.js';`,
		"/assets/style.css": `:root`,
		"/favicon.ico":      `<svg`,
	} {
		w := get(t, h, path)
		if w.Code != 200 {
			t.Errorf("GET %s: %d; want 200", path, w.Code)
			continue
		}
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET %s: body lacks %q", path, want)
		}
		for k, v := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
			"Referrer-Policy":         "no-referrer",
			"X-Content-Type-Options":  "nosniff",
			"Cache-Control":           "no-cache",
		} {
			if got := w.Header().Get(k); got != v {
				t.Errorf("GET %s: %s = %q; want %q", path, k, got, v)
			}
		}
		if w.Header().Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", path)
		}
	}
	for path, ctype := range map[string]string{"/": "text/html; charset=utf-8", "/assets/app.js": "text/javascript; charset=utf-8", "/assets/style.css": "text/css; charset=utf-8"} {
		if got := get(t, h, path).Header().Get("Content-Type"); got != ctype {
			t.Errorf("GET %s: Content-Type %q; want %q", path, got, ctype)
		}
	}
	if w := get(t, h, "/assets/nope.js"); w.Code != 404 {
		t.Errorf("GET /assets/nope.js: %d; want 404", w.Code)
	}
}

// A browser that has an asset revalidates it for the price of a 304; one
// that takes gzip gets it compressed, and the same bytes once unpacked.
func TestCaching(t *testing.T) {
	h := newHandler(t)
	first := get(t, h, "/assets/app.js")
	etag := first.Header().Get("ETag")
	if w := get(t, h, "/assets/app.js", "If-None-Match", etag); w.Code != 304 || w.Body.Len() != 0 {
		t.Errorf("revalidation with the ETag: %d, %d bytes; want 304, none", w.Code, w.Body.Len())
	}
	if w := get(t, h, "/assets/app.js", "If-None-Match", `"other"`); w.Code != 200 {
		t.Errorf("revalidation with another ETag: %d; want 200", w.Code)
	}
	gz := get(t, h, "/assets/app.js", "Accept-Encoding", "gzip, deflate, br")
	if gz.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(gz.Header().Get("Vary"), "Accept-Encoding") {
		t.Fatalf("with Accept-Encoding gzip: Content-Encoding %q, Vary %q", gz.Header().Get("Content-Encoding"), gz.Header().Get("Vary"))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, first.Body.Bytes()) {
		t.Error("the gzip form unpacks to other bytes than the plain one")
	}
	if w := get(t, h, "/assets/app.js", "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 got gzip")
	}
}

// The pages run no inline script or style (the policy would block them)
// and load nothing from another host.
func TestNoInlineCodeOrOtherHosts(t *testing.T) {
	h := newHandler(t)
	inline := regexp.MustCompile(`(?i)<script(?:\s+type="module")?>|<style|\sstyle=|\son[a-z]+=|javascript:`)
	remote := regexp.MustCompile(`(?i)(?:src|href)="(?:https?:)?//|url\(\s*["']?(?:https?:)?//|fetch\(\s*["'\x60]https?:|@import`)
	for name := range h.files {
		body := string(h.files[name].body)
		if strings.HasSuffix(name, ".html") && inline.MatchString(body) {
			t.Errorf("%s has inline code: %q", name, inline.FindString(body))
		}
		if m := remote.FindString(body); m != "" {
			t.Errorf("%s loads from another host: %q", name, m)
		}
		if strings.HasSuffix(name, ".js") && strings.Contains(body, "innerHTML") {
			t.Errorf("%s uses innerHTML: content must go in as text", name)
		}
	}
}

// pageBytes returns what a browser transfers (gzip taken) for a page and
// every asset it loads: the files its HTML names, and the modules those
// import, each counted once.
func pageBytes(t *testing.T, h *Handler, page string) (int, []string) {
	t.Helper()
	ref := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`)
	imp := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';`)
	seen := map[string]bool{}
	total := 0
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		w := get(t, h, path, "Accept-Encoding", "gzip")
		if w.Code != 200 {
			t.Fatalf("GET %s: %d", path, w.Code)
		}
		total += w.Body.Len()
		f := h.files[path]
		if f == nil { // a page's own path
			f = h.files["/assets/index.html"]
			if path == "/ops" {
				f = h.files["/assets/ops.html"]
			}
		}
		for _, m := range ref.FindAllStringSubmatch(string(f.body), -1) {
			walk(m[1])
		}
		for _, m := range imp.FindAllStringSubmatch(string(f.body), -1) {
			walk("/assets/" + m[1])
		}
	}
	walk(page)
	var names []string
	for p := range seen {
		names = append(names, p)
	}
	return total, names
}

// The first page of the app, and the console's, weigh less than 150 KB
// transferred, all they load included. (The browser test measures the
// same in Chromium from its resource timings.)
func TestBudget(t *testing.T) {
	h := newHandler(t)
	const budget = 150 * 1024
	for _, page := range []string{"/", "/ops"} {
		n, files := pageBytes(t, h, page)
		t.Logf("%s: %d bytes in %d files %v", page, n, len(files), files)
		if n >= budget {
			t.Errorf("%s: %d bytes transferred; the budget is %d", page, n, budget)
		}
		if len(files) < 4 {
			t.Errorf("%s: only %v counted; the walk missed the assets", page, files)
		}
	}
}

// Every module is embedded and loaded: the app's views and the console
// import only modules that exist (pageBytes fails on a 404), no module
// lies embedded that neither page loads, and the app's page preloads
// each of its modules.
func TestEveryModuleLoaded(t *testing.T) {
	h := newHandler(t)
	loaded := map[string]bool{}
	for _, page := range []string{"/", "/ops"} {
		_, files := pageBytes(t, h, page)
		for _, f := range files {
			loaded[f] = true
		}
	}
	for _, want := range []string{"app.js", "home.js", "top.js", "user.js", "post.js", "signin.js", "list.js", "live.js", "api.js", "ui.js", "ops.js"} {
		if !loaded["/assets/"+want] {
			t.Errorf("/assets/%s is not loaded by / or /ops", want)
		}
	}
	for name := range h.files {
		if strings.HasSuffix(name, ".js") && !loaded[name] {
			t.Errorf("%s is embedded but no page loads it", name)
		}
	}
	// The app's page preloads every module the app imports, so that the
	// browser asks for them at once.
	index := string(h.files["/assets/index.html"].body)
	_, app := pageBytes(t, h, "/")
	for _, f := range app {
		if strings.HasSuffix(f, ".js") && f != "/assets/app.js" && !strings.Contains(index, `<link rel="modulepreload" href="`+f+`">`) {
			t.Errorf("index.html does not preload %s", f)
		}
	}
}
