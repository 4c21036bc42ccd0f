package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/feedd/feedd/internal/shards"
)

// minSecretLen is the shortest admin token or JWT secret feedd accepts:
// 256 bits, the least RFC 7518 allows for an HS256 key, and out of reach
// of guessing for a bearer token.
const minSecretLen = 32

// secretKind says how a setting holds a secret (the settings table,
// settings.go, marks which do).
type secretKind int

const (
	// wholeSecret: the value is the secret (a token, a key).
	wholeSecret secretKind = iota + 1
	// credentialURL: a URL or DSN (or a comma-separated list of them) that
	// may carry a password in its userinfo.
	credentialURL
	// connString: a libpq connection string (PostgreSQL's): a URL whose
	// password may be in its userinfo or in a password parameter, or
	// keyword=value pairs whose password (and sslpassword) is the secret.
	connString
	// shardList: FEEDD_SHARD_DSNS, FROM-TO=DSN parts separated by ";",
	// each DSN a MySQL one (credentialURL) or a PostgreSQL one
	// (connString).
	shardList
)

// showSecret is how a secret setting's value may be shown: "(set)" for a
// token, the URL or DSN with "***" for its password.
func showSecret(kind secretKind, v string) string {
	if v == "" {
		return ""
	}
	if kind == wholeSecret {
		return "(set)"
	}
	shown, _ := redactCredentials(kind, v)
	return shown
}

// redactCredentials is v, a setting of kind credentialURL or connString,
// with its passwords replaced by "***", and the passwords.
func redactCredentials(kind secretKind, v string) (string, []string) {
	switch kind {
	case connString:
		return redactConnString(v)
	case shardList:
		return redactShardList(v)
	}
	return redactURLs(v)
}

// redactShardList is redactURLs for FEEDD_SHARD_DSNS: each part's DSN is
// redacted as its kind of server reads it. A part without "=" is
// redacted whole as a DSN, so that a malformed map hides its password too.
func redactShardList(s string) (string, []string) {
	parts := strings.Split(s, ";")
	var passwords []string
	for i, part := range parts {
		rng, dsn, ok := strings.Cut(part, "=")
		if !ok {
			rng, dsn = "", part
		}
		kind := credentialURL
		if shards.BackendOf(dsn) == shards.Postgres {
			kind = connString
		}
		shown, pw := redactCredentials(kind, dsn)
		passwords = append(passwords, pw...)
		if ok {
			shown = rng + "=" + shown
		}
		parts[i] = shown
	}
	return strings.Join(parts, ";"), passwords
}

// redactConnString is redactURLs for a libpq connection string, which the
// driver (pgx) reads as a URL when it starts with postgres:// or
// postgresql://, and as keyword=value pairs otherwise. Either may name a
// password as a parameter: password=pw in the URL's query, or
// password=pw, password = 'p w' (quoted; a backslash escapes a byte) among
// the keywords. Every "password" followed by "=" is taken for one, so
// that a string too malformed for the driver still has its password
// hidden; an unterminated quote hides the rest of the string.
func redactConnString(s string) (string, []string) {
	var passwords []string
	isURL := strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
	if isURL {
		s, passwords = redactURLs(s)
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "password")
		if i < 0 {
			break
		}
		j := i + len("password")
		v := strings.TrimLeft(rest[j:], " \t\n\r\v\f")
		if !strings.HasPrefix(v, "=") {
			b.WriteString(rest[:j])
			rest = rest[j:]
			continue
		}
		v = strings.TrimLeft(v[1:], " \t\n\r\v\f")
		start := len(rest) - len(v) // where the value starts in rest
		end, raw, value := connValue(v, isURL)
		b.WriteString(rest[:start])
		if raw == "" { // no password: nothing to hide
			b.WriteString(v[:end])
		} else {
			b.WriteString("***")
			passwords = append(passwords, raw)
			if value != raw {
				passwords = append(passwords, value)
			}
		}
		rest = v[end:]
	}
	if b.Len() == 0 {
		return s, passwords
	}
	b.WriteString(rest)
	return b.String(), passwords
}

// connValue reads the value at the start of v as pgx does: in a URL's
// query up to the next parameter; among keywords up to white space, or
// between single quotes. It returns where the value ends, the value as
// written (without quotes) and as the driver reads it.
func connValue(v string, inURL bool) (end int, raw, value string) {
	if inURL {
		end = strings.IndexAny(v, "&# \t\n")
		if end < 0 {
			end = len(v)
		}
		raw = v[:end]
		if u, err := url.QueryUnescape(raw); err == nil {
			return end, raw, u
		}
		return end, raw, raw
	}
	// A backslash takes the next byte as it is, in quotes or not.
	unescape := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' {
				if i++; i == len(s) {
					break
				}
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
	if strings.HasPrefix(v, "'") {
		for end = 1; end < len(v) && v[end] != '\''; end++ {
			if v[end] == '\\' {
				end++
			}
		}
		raw = v[1:min(end, len(v))]
		return min(end+1, len(v)), raw, unescape(raw)
	}
	for ; end < len(v) && !isSpace(v[end]); end++ {
		if v[end] == '\\' {
			end++
		}
	}
	end = min(end, len(v))
	raw = v[:end]
	return end, raw, unescape(raw)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// redactURLs returns s with the password of every URL or DSN in it
// replaced by "***", and the passwords it found. It reads userinfo the
// way the drivers do: in a URL (scheme://user:password@host…), up to the
// last "@" before the next URL of a comma-separated list; in a MySQL DSN
// (user:password@tcp(host)/db), from the first ":" to the last "@" before
// the database's "/". A string that is neither is returned as is.
func redactURLs(s string) (string, []string) {
	var b strings.Builder
	var passwords []string
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		// This URL ends where the next one's scheme starts.
		end := len(rest)
		if j := strings.Index(rest, "://"); j >= 0 {
			end = j
			for end > 0 && isSchemeChar(rest[end-1]) {
				end--
			}
		}
		cur := rest[:end]
		if at := strings.LastIndex(cur, "@"); at >= 0 {
			if colon := strings.Index(cur[:at], ":"); colon >= 0 {
				passwords = append(passwords, cur[colon+1:at])
				cur = cur[:colon+1] + "***" + cur[at:]
			}
		}
		b.WriteString(cur)
		rest = rest[end:]
	}
	if b.Len() > 0 {
		b.WriteString(rest)
		return b.String(), passwords
	}
	// A MySQL DSN: [user[:password]@][net[(addr)]]/dbname[?params].
	head := s
	if slash := strings.LastIndex(s, "/"); slash >= 0 {
		head = s[:slash]
	}
	at := strings.LastIndex(head, "@")
	if at < 0 {
		return s, nil
	}
	colon := strings.Index(head[:at], ":")
	if colon < 0 {
		return s, nil
	}
	return s[:colon+1] + "***" + s[at:], []string{s[colon+1 : at]}
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// minBarePassword is the shortest secret searched for on its own in
// output: a shorter one would turn every word it occurs in into "***",
// so a password that short is replaced only where a URL shows it
// (":password@").
const minBarePassword = 4

// redactor keeps secrets out of what feedd writes: a last line of
// defence behind showSecret, for messages that quote a URL or DSN
// (url.Parse's errors, a driver's) or a value.
type redactor struct{ r *strings.Replacer }

// newRedactor collects the secrets of the settings in the environment
// and in args (-name value, -name=value).
func newRedactor(args []string, getenv func(string) string) *redactor {
	type setting struct {
		kind  secretKind
		value string
	}
	var found []setting
	kinds := map[string]secretKind{} // by flag name
	for _, o := range settings(&config{}) {
		if o.secret == 0 {
			continue
		}
		kinds[o.name] = o.secret
		if v := getenv(o.env); v != "" {
			found = append(found, setting{o.secret, v})
		}
	}
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		kind, ok := kinds[name]
		if !ok || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if value != "" {
			found = append(found, setting{kind, value})
		}
	}
	pairs := map[string]string{}
	add := func(secret, shown string) {
		if secret == "" || secret == shown {
			return
		}
		// As a message may quote it: raw, Go-quoted (%q), JSON-escaped
		// (the JSON log handler).
		pairs[secret] = shown
		pairs[quoted(secret)] = quoted(shown)
		pairs[jsonEscaped(secret)] = jsonEscaped(shown)
	}
	for _, s := range found {
		if s.kind == wholeSecret {
			// One that short is refused at start, so it guards nothing.
			if len(s.value) >= minBarePassword {
				add(s.value, "***")
			}
			continue
		}
		shown, passwords := redactCredentials(s.kind, s.value)
		add(s.value, shown)
		for _, part := range strings.Split(s.value, ",") {
			partShown, _ := redactCredentials(s.kind, part)
			add(part, partShown)
		}
		for _, p := range passwords {
			// As written, decoded (a parsed URL's field) and encoded
			// (a URL printed back).
			forms := []string{p, url.UserPassword("", p).String()[1:]}
			if u, err := url.PathUnescape(p); err == nil {
				forms = append(forms, u)
			}
			for _, f := range forms {
				add(":"+f+"@", ":***@")
				add("password="+f, "password=***")
				if len(f) >= minBarePassword {
					add(f, "***")
				}
			}
		}
	}
	if len(pairs) == 0 {
		return &redactor{}
	}
	// At each position the replacer tries the pairs in order: longest
	// first, so a whole URL wins over the password inside it.
	olds := make([]string, 0, len(pairs))
	for k := range pairs {
		olds = append(olds, k)
	}
	sort.Slice(olds, func(i, j int) bool {
		if len(olds[i]) != len(olds[j]) {
			return len(olds[i]) > len(olds[j])
		}
		return olds[i] < olds[j]
	})
	oldnew := make([]string, 0, 2*len(olds))
	for _, k := range olds {
		oldnew = append(oldnew, k, pairs[k])
	}
	return &redactor{strings.NewReplacer(oldnew...)}
}

func quoted(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func jsonEscaped(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	q := strings.TrimSpace(b.String())
	return q[1 : len(q)-1]
}

func (r *redactor) string(s string) string {
	if r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// writer returns w with r's secrets replaced in every write. Each write
// is replaced whole (a log line, a usage text) and written at once, so
// that a secret split across writes is not the concern it would be for a
// stream.
func (r *redactor) writer(w io.Writer) io.Writer {
	if r.r == nil {
		return w
	}
	return redactingWriter{w, r}
}

type redactingWriter struct {
	w io.Writer
	r *redactor
}

func (w redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.string(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// err returns err with r's secrets replaced in its message; errors.Is
// and errors.As still see the original.
func (r *redactor) err(err error) error {
	if err == nil || r.r == nil {
		return err
	}
	msg := err.Error()
	if clean := r.string(msg); clean != msg {
		return redactedError{clean, err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// secrets returns the admin token and JWT secret. On the embedded default
// a missing one is generated once and kept in the data dir; on a SQL
// server (MySQL or PostgreSQL) the deployment must set both, since several processes must agree on them.
func secrets(cfg config) (admin string, jwt []byte, generated bool, err error) {
	admin, jwtStr := cfg.adminToken, cfg.jwtSecret
	if !cfg.embedded() {
		if admin == "" || jwtStr == "" {
			return "", nil, false, fmt.Errorf("FEEDD_ADMIN_TOKEN and FEEDD_JWT_SECRET must be set when %s is", cfg.sqlDSNVar())
		}
		return admin, []byte(jwtStr), false, nil
	}
	if err := makeDataDir(cfg.dataDir); err != nil {
		return "", nil, false, err
	}
	if admin == "" {
		if admin, err = keptSecret(filepath.Join(cfg.dataDir, "admin_token")); err != nil {
			return "", nil, false, err
		}
		generated = true
	}
	if jwtStr == "" {
		if jwtStr, err = keptSecret(filepath.Join(cfg.dataDir, "jwt_secret")); err != nil {
			return "", nil, false, err
		}
	}
	return admin, []byte(jwtStr), generated, nil
}

// makeDataDir creates the data dir readable by feedd's user only (it
// holds the database and the secrets), whatever the umask. A directory
// that exists keeps its mode: it may be a mount point the operator set up.
func makeDataDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	return nil
}

// keptSecret reads a secret file, first creating it with 32 random bytes
// (hex) if it does not exist. The file appears whole or not at all
// (written aside, synced, then linked into place), so a crash cannot
// leave an empty or partial secret; and it never replaces one another
// process created meanwhile, so processes sharing the data dir agree.
// An empty, short or unreadable file is an error: replacing it would
// silently invalidate every token signed with the old secret.
func keptSecret(path string) (string, error) {
	s, err := readSecret(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate %s: %w", path, err)
	}
	s = hex.EncodeToString(raw[:])
	switch err := writeNew(path, []byte(s+"\n")); {
	case errors.Is(err, fs.ErrExist): // another process won the race
		return readSecret(path)
	case err != nil:
		return "", err
	}
	return s, nil
}

// readSecret reads a secret file, tightening its mode to 0600 if it is
// looser: it is feedd's own file.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w (fix or remove it: feedd generates a missing secret)", path, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty: remove it for feedd to generate a new secret (tokens signed with the old one stop working), or write the secret back into it", path)
	}
	if len(s) < minSecretLen {
		return "", fmt.Errorf("%s holds a secret %d bytes long: want at least %d; remove the file for feedd to generate one", path, len(s), minSecretLen)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("make %s private: %w", path, err)
		}
	}
	return s, nil
}

// writeNew creates path with content, mode 0600, atomically: written to
// a temporary file in the same directory, synced, then linked to path
// (a rename that cannot replace an existing file: it fails with
// fs.ErrExist); the directory is synced so that the new name survives a
// power cut.
func writeNew(path string, content []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(content)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// A filesystem without hard links: rename instead, which
		// replaces a file another process linked in the same instant.
		if _, err := os.Lstat(path); err == nil {
			return fs.ErrExist
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
