// Package webapp is feedd's browser face: the app at / (sign in with a user
// token, the home feed live, users, posts, the most liked) and the
// operator's console at /ops. Both are static files embedded in the binary
// (plain JavaScript modules, no build step) that speak only the public
// HTTP API, so the pages hold no secret and need no server-side session:
// the token stays in the tab's sessionStorage.
package webapp

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Headers every page and asset carries. The policy allows scripts, styles,
// images and connections (fetch, EventSource) from feedd's own origin
// only, so a post that slipped into the DOM as markup still could not run
// a script; no page may frame these (clickjacking); links never tell
// other sites where the reader came from.
const (
	ContentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'"
	ReferrerPolicy        = "no-referrer"
)

// appPaths are the app's own addresses besides /: the app routes on the
// client (history API), so a deep link or a reload of one of these must
// answer the app's page.
var appPaths = []string{"/top", "/ranked", "/lists", "/search", "/notifications", "/lists/{id}", "/users/{id}", "/posts/{id}"}

// Handler serves the pages and their assets.
type Handler struct {
	files map[string]*file // by URL path
}

// file is one response, made once at start: the bytes, their gzip form
// when that is smaller, and a strong ETag from the content.
type file struct {
	body, gz []byte
	ctype    string
	etag     string
	cache    string
}

// New returns the handler with every asset loaded and compressed.
func New() (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		f, err := newFile(b, name)
		if err != nil {
			return err
		}
		h.files["/assets/"+name] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webapp: load assets: %w", err)
	}
	for _, page := range []string{"index.html", "ops.html"} {
		if h.files["/assets/"+page] == nil {
			return nil, fmt.Errorf("webapp: asset %s is missing", page)
		}
	}
	return h, nil
}

func newFile(b []byte, name string) (*file, error) {
	sum := sha256.Sum256(b)
	f := &file{
		body:  b,
		ctype: mime.TypeByExtension(path.Ext(name)),
		etag:  `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		// Revalidated on every use: a 304 costs a round trip on loopback
		// or a LAN and never serves a stale module after an upgrade, which
		// a module that imports another by a fixed name could not tell.
		cache: "no-cache",
	}
	if f.ctype == "" {
		f.ctype = "application/octet-stream"
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() < len(b) {
		f.gz = buf.Bytes()
	}
	return f, nil
}

// Patterns are the ServeMux patterns the handler answers (GET, and so
// HEAD). Everything else stays the API's: /v1/…, the probes, and its JSON
// 404 for any other path.
func (h *Handler) Patterns() []string {
	ps := []string{"GET /{$}", "GET /ops", "GET /assets/{name}", "GET /favicon.ico"}
	for _, p := range appPaths {
		ps = append(ps, "GET "+p)
	}
	return ps
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("Referrer-Policy", ReferrerPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY") // frame-ancestors for older browsers
	var f *file
	switch p := r.URL.Path; {
	case p == "/ops":
		f = h.files["/assets/ops.html"]
	case p == "/favicon.ico":
		f = h.files["/assets/icon.svg"]
	case strings.HasPrefix(p, "/assets/"):
		f = h.files[p]
	default:
		f = h.files["/assets/index.html"]
	}
	if f == nil {
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintln(w, "no such file")
		return
	}
	hd.Set("Content-Type", f.ctype)
	hd.Set("Cache-Control", f.cache)
	hd.Set("ETag", f.etag)
	hd.Add("Vary", "Accept-Encoding")
	status := http.StatusOK
	if id := r.PathValue("id"); id != "" && strings.Trim(id, "0123456789") != "" {
		// Not an id: the app's page says so, and the status too.
		status = http.StatusNotFound
	}
	if status == http.StatusOK && etagMatch(r.Header.Get("If-None-Match"), f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatch reports whether an If-None-Match header names etag (or "*").
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip
// (q=0 refuses it).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
