package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/testenv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

// The browser tests drive Debian's chromium (FEEDD_TEST_CHROMIUM names
// another binary) over the real feedd on the embedded stack: the pages
// only speak the public API, which the behavioural suite covers on every
// stack. Without chromium they skip, loudly, and fail under CI=true
// (.ci/run installs it).

const chromiumPath = "/usr/bin/chromium"

// browser is one headless Chromium; each tab runs in a browser context of
// its own (own storage, own cache), as two people on two machines would.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string // where screenshots go
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := os.Getenv("FEEDD_TEST_CHROMIUM")
	if exe == "" {
		exe = chromiumPath
	}
	if _, err := os.Stat(exe); err != nil {
		feedtest.Missing(t, "no Chromium at %s (%v): apt-get install chromium", exe, err)
	}
	// Flags for a sandbox that runs tests as root, with no network beyond
	// loopback: no sandbox, no GPU, nothing that phones home.
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(alloc)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", exe, err)
	}
	// Screenshots outlive the test: they are its artifacts.
	dir := os.Getenv("FEEDD_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "feedd-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return &browser{t: t, ctx: ctx, shots: dir}
}

// tab is one page of the browser.
type tab struct {
	t    *testing.T
	ctx  context.Context
	name string
	b    *browser
}

// tab opens a page in a fresh browser context, at width × height.
func (b *browser) tab(name string, width, height int64) *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	// The first call opens the tab and ties its life to the context it
	// runs on: this one, without a timeout.
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a tab: %v", err)
	}
	tb := &tab{t: b.t, ctx: ctx, name: name, b: b}
	tb.do(chromedp.EmulateViewport(width, height))
	return tb
}

// attach returns the tab that tb's page opened (window.open).
func (tb *tab) attach(name string, id target.ID) *tab {
	tb.t.Helper()
	ctx, cancel := chromedp.NewContext(tb.ctx, chromedp.WithTargetID(id))
	tb.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		tb.t.Fatalf("attach to a tab: %v", err)
	}
	return &tab{t: tb.t, ctx: ctx, name: name, b: tb.b}
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v; the page says: %s", tb.name, err, tb.text())
	}
}

// js evaluates expr in the page (awaiting a promise) and returns its value.
func js[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, func(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) }))
	if err != nil {
		tb.t.Fatalf("%s: %s: %v", tb.name, expr, err)
	}
	return v
}

// wait polls expr in the page until it is truthy; what says what for.
func (tb *tab) wait(what, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		tb.t.Fatalf("%s: waiting for %s (%s): %v; the page says: %s", tb.name, what, expr, err, tb.text())
	}
}

// text is the page's visible text, for failure messages.
func (tb *tab) text() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return strings.Join(strings.Fields(s), " ")
}

// shot saves a screenshot of the viewport as name.png.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("%s: screenshot: %v", tb.name, err)
	}
	if err := os.WriteFile(filepath.Join(tb.b.shots, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// signIn signs the tab in on the app's sign-in form with a user token.
func (tb *tab) signIn(url, token string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#signin button")))
	tb.wait("the home feed", `document.querySelector('#compose') && document.querySelector('#view .end')?.dataset.state !== 'loading'`)
}

// feedIDs are the ids of the posts on the page, top to bottom.
func (tb *tab) feedIDs() []string {
	tb.t.Helper()
	return js[[]string](tb, `[...document.querySelectorAll('#view .list article')].map(a => a.dataset.id)`)
}

// liveOn waits until the home page's live stream is open.
func (tb *tab) liveOn() {
	tb.t.Helper()
	tb.wait("the live stream", `document.body.dataset.live === 'on'`)
}

// authorAndReader creates an author and a reader who follows them, and
// returns their tokens.
func (in *instance) authorAndReader() (author, reader string) {
	in.t.Helper()
	authorID, authorTok := in.user("author")
	_, readerTok := in.user("reader")
	in.follow(readerTok, authorID)
	return authorTok, readerTok
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestBrowserApp(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	_, aliceTok := in.user("alice")
	bobID, bobTok := in.user("bob")

	alice := b.tab("alice", 1000, 800)
	alice.signIn(in.url, aliceTok)
	if got := js[string](alice, `sessionStorage.getItem('feedd.token')`); got != aliceTok {
		t.Fatalf("after sign-in sessionStorage holds %q; want the token", got)
	}
	if got := js[string](alice, `document.cookie + location.href`); strings.Contains(got, aliceTok) {
		t.Fatal("the token is in a cookie or the URL")
	}
	alice.shot("home-empty")

	// Alice opens bob's page by his id, and follows him there.
	alice.do(chromedp.SetValue(chromedp.CSS("#goto-id"), bobID), chromedp.Click(chromedp.CSS("#goto button")))
	alice.wait("the follow button", `(b => b && !b.disabled && b.textContent === 'Follow')(document.querySelector('#follow'))`)
	alice.do(chromedp.Click(chromedp.CSS("#follow")))
	alice.wait("the unfollow button", `document.querySelector('#follow')?.textContent === 'Unfollow' && document.querySelector('#followers')?.textContent === '1'`)
	if n := in.must(200, "GET", "/v1/users/"+bobID, aliceTok, nil).body["follower_count"]; n != float64(1) {
		t.Fatalf("bob's follower_count after the click = %v; want 1", n)
	}
	alice.shot("user")

	// Alice's home is open and live; bob posts from his own browser.
	alice.do(chromedp.Click(chromedp.CSS(`nav a[href="/"]`)))
	alice.wait("the home feed", `document.querySelector('#compose') && document.querySelector('#view .end')?.dataset.state !== 'loading'`)
	alice.liveOn()
	js[int](alice, `window.notReloaded = 1`)

	bob := b.tab("bob", 1000, 800)
	bob.signIn(in.url, bobTok)
	bob.do(chromedp.SetValue(chromedp.CSS("#compose"), "hello from bob"), chromedp.Click(chromedp.CSS(".compose button")))
	bob.wait("bob's post on his own page", `[...document.querySelectorAll('#view .list .content')].some(p => p.textContent === 'hello from bob')`)

	alice.wait("the pill", `(p => p && !p.hidden && p.textContent === '1 new post')(document.querySelector('#pill'))`)
	alice.do(chromedp.Click(chromedp.CSS("#pill")))
	alice.wait("bob's post on top", `document.querySelector('#view .list article .content')?.textContent === 'hello from bob'`)
	if js[int](alice, `window.notReloaded || 0`) != 1 {
		t.Fatal("the page reloaded to show the new post")
	}
	postID := alice.feedIDs()[0]

	// Likes: the count on the page and in the API.
	likeBtn := `document.querySelector('#view .list article[data-id="` + postID + `"] .like')`
	for _, want := range []struct {
		count int
		liked bool
	}{{1, true}, {0, false}} {
		alice.do(chromedp.Click(chromedp.CSS(`#view .list article[data-id="` + postID + `"] .like`)))
		alice.wait(fmt.Sprint("like count ", want.count), fmt.Sprintf(`%s.querySelector('.count').textContent === '%d' && %s.getAttribute('aria-pressed') === '%v'`, likeBtn, want.count, likeBtn, want.liked))
		p := in.must(200, "GET", "/v1/posts/"+postID, aliceTok, nil)
		if p.body["like_count"] != float64(want.count) || p.body["liked_by_me"] != want.liked {
			t.Fatalf("after a click the API says like_count %v liked_by_me %v; want %d, %v", p.body["like_count"], p.body["liked_by_me"], want.count, want.liked)
		}
	}

	// Markup in a post is text, and runs nothing.
	xss := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	xssID := in.post(bobTok, xss)
	alice.wait("the pill", `(p => p && !p.hidden && p.textContent === '1 new post')(document.querySelector('#pill'))`)
	alice.shot("home-pill")
	alice.do(chromedp.Click(chromedp.CSS("#pill")))
	alice.wait("the markup post on top", `document.querySelector('#view .list article .content')?.textContent === `+quote(xss))
	if got := js[string](alice, `String(window.pwned) + ' ' + document.querySelectorAll('#view img, #view script').length`); got != "undefined 0" {
		t.Fatalf("window.pwned and img/script elements in the feed: %s; want undefined 0", got)
	}

	// Bob deletes that post from his page; it leaves alice's open home too
	// (the stream's delete event).
	bob.do(chromedp.Navigate(in.url + "/users/" + bobID))
	bob.wait("the post to delete", `!!document.querySelector('#view article[data-id="`+xssID+`"] .delete')`)
	bob.do(chromedp.Click(chromedp.CSS(`#view article[data-id="` + xssID + `"] .delete`)))
	bob.wait("the confirmation", `!!document.querySelector('dialog[open] .ok')`)
	bob.do(chromedp.Click(chromedp.CSS("dialog[open] .ok")))
	bob.wait("the post gone", `!document.querySelector('#view article[data-id="`+xssID+`"]')`)
	in.must(404, "GET", "/v1/posts/"+xssID, bobTok, nil)
	alice.wait("the deleted post gone from alice's home", `!document.querySelector('#view article[data-id="`+xssID+`"]')`)
	if got := alice.feedIDs(); !slices.Equal(got, []string{postID}) {
		t.Fatalf("alice's home after the delete: %v; want [%s]", got, postID)
	}

	// A post's page: its likers; the top page: the most liked.
	in.must(200, "PUT", "/v1/posts/"+postID+"/like", aliceTok, nil)
	alice.do(chromedp.Navigate(in.url + "/posts/" + postID))
	alice.wait("the likers", `[...document.querySelectorAll('#view .user a')].some(a => a.textContent === 'alice')`)
	alice.shot("post")

	// Replies: the post's Reply action opens its thread with the reply
	// form ready; a reply shows in the thread and is counted; the reply's
	// own page shows the post above it.
	alice.do(chromedp.Click(chromedp.CSS(`#view .single article .reply`)))
	alice.wait("the reply form", `document.activeElement?.id === 'reply'`)
	alice.do(chromedp.SetValue(chromedp.CSS("#reply"), "a reply from alice"), chromedp.Click(chromedp.CSS(".reply-form button")))
	alice.wait("the reply in the thread", `[...document.querySelectorAll('#view .descendants .content')].some(p => p.textContent === 'a reply from alice')`)
	if n := in.must(200, "GET", "/v1/posts/"+postID, aliceTok, nil).body["reply_count"]; n != float64(1) {
		t.Fatalf("after the reply the post's reply_count is %v; want 1", n)
	}
	replyID := js[string](alice, `document.querySelector('#view .descendants article').dataset.id`)
	alice.do(chromedp.Navigate(in.url + "/posts/" + replyID))
	alice.wait("the thread above the reply", `document.querySelector('#view .ancestors article')?.dataset.id === '`+postID+`' && !!document.querySelector('#view .single .in-reply-to')`)
	alice.wait("the post's reply count", `document.querySelector('#view .ancestors article .reply .count')?.textContent === ' 1'`)
	alice.shot("thread")

	// The Replies menu: bob's reply to carol, whom alice does not follow,
	// stays out of alice's home under the default rule; "all" shows it.
	_, carolTok := in.user("carol")
	toCarol := in.must(201, "POST", "/v1/posts", bobTok, map[string]any{"content": "bob to carol", "in_reply_to_id": in.post(carolTok, "carol's post")}).str("id")
	after := in.post(bobTok, "bob, after his reply")
	testenv.Eventually(t, 10*time.Second, "bob's next post in alice's feed", func() bool { return slices.Contains(in.feedAll(aliceTok, 50), after) })
	alice.do(chromedp.Navigate(in.url + "/"))
	const menu = `document.querySelector('#home-replies')`
	alice.wait("the feed and its Replies menu", menu+`?.value === 'following' && !`+menu+`.disabled && document.querySelector('#view .list article')?.dataset.id === '`+after+`'`)
	if slices.Contains(alice.feedIDs(), toCarol) {
		t.Fatalf("alice's home shows bob's reply to carol under the default rule: %v", alice.feedIDs())
	}
	js[bool](alice, `(s => { s.value = 'all'; s.dispatchEvent(new Event('change')); return true })(`+menu+`)`)
	alice.wait("bob's reply to carol under all", `!!document.querySelector('#view .list article[data-id="`+toCarol+`"]') && `+menu+`.value === 'all'`)
	if r := in.must(200, "GET", "/v1/me/settings", aliceTok, nil); r.str("home_replies") != "all" {
		t.Fatalf("after the menu's change the settings are %s; want home_replies all", r.raw)
	}
	// Reposts: bob reposts dave's post from dave's page (the Repost
	// button counts it); alice, who follows bob and not dave, sees "bob
	// reposted" above dave's post in her home.
	daveID, daveTok := in.user("dave")
	daves := in.post(daveTok, "dave's post, reposted")
	bob.do(chromedp.Navigate(in.url + "/users/" + daveID))
	repostBtn := `#view article[data-id="` + daves + `"] .repost`
	bob.wait("dave's post and its Repost button", `!!document.querySelector('`+repostBtn+`')`)
	bob.do(chromedp.Click(chromedp.CSS(repostBtn)))
	bob.wait("the repost counted", `(b => b.getAttribute('aria-pressed') === 'true' && b.querySelector('.count')?.textContent === '1')(document.querySelector('`+repostBtn+`'))`)
	if p := in.must(200, "GET", "/v1/posts/"+daves, bobTok, nil); p.body["repost_count"] != float64(1) || p.body["reposted_by_me"] != true {
		t.Fatalf("after bob's click the API says %s; want repost_count 1, reposted_by_me true", p.raw)
	}
	alice.do(chromedp.Navigate(in.url + "/"))
	alice.wait("bob's repost in alice's home", `(a => a && a.querySelector('.reposted-by')?.textContent.includes('bob reposted') && a.querySelector('article.post')?.dataset.id === '`+daves+`' && a.querySelector('article.post .content')?.textContent === "dave's post, reposted")(document.querySelector('#view .list article.repost'))`)
	alice.shot("repost")

	alice.do(chromedp.Navigate(in.url + "/top"))
	alice.wait("the top post", `(a => a && a.dataset.id === '`+postID+`')(document.querySelector('#view .list article'))`)
	alice.shot("top")

	// At phone width nothing overflows sideways.
	phone := b.tab("phone", 390, 844)
	phone.signIn(in.url, aliceTok)
	if w := js[int](phone, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Errorf("at 390 px the page is %d px too wide", w)
	}
	if h := js[int](phone, `document.querySelector('#pill').offsetHeight`); h != 0 {
		t.Errorf("with no new posts the pill is %d px high; want hidden", h)
	}
	phone.shot("home-phone")

	// Signing out leaves nothing behind.
	alice.do(chromedp.Click(chromedp.CSS("#signout")))
	alice.wait("the sign-in form", `!!document.querySelector('#token')`)
	if n := js[int](alice, `sessionStorage.length`); n != 0 {
		t.Fatalf("after sign-out sessionStorage holds %d items; want none", n)
	}
}

// Infinite scroll pages through 100 posts: each exactly once, newest first.
func TestBrowserInfiniteScroll(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	authorTok, readerTok := in.authorAndReader()
	var want []string
	for i := range 100 {
		want = append(want, in.post(authorTok, fmt.Sprintf("post %d", i)))
	}
	slices.Reverse(want)
	in.feedEventually(readerTok, 100, want)

	tb := b.tab("reader", 1000, 800)
	tb.signIn(in.url, readerTok)
	if n := len(tb.feedIDs()); n >= 100 {
		t.Fatalf("the first screen shows %d posts; want a page, not all", n)
	}
	// Scroll as a reader does, until the end shows: a page asked for while
	// the last one loads is not asked again until the next scroll, so on a
	// slow machine a fixed number of scrolls can stop short of the end.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if js[bool](tb, `document.querySelector('#view .end').textContent === 'That is all.'`) {
			break
		}
		js[bool](tb, `window.scrollTo(0, document.documentElement.scrollHeight), true`)
		time.Sleep(100 * time.Millisecond)
	}
	tb.wait("the end of the feed", `document.querySelector('#view .end')?.textContent === 'That is all.'`)
	if got := tb.feedIDs(); !slices.Equal(got, want) {
		t.Fatalf("after scrolling to the end the page shows %d posts %v; want the 100 newest first %v", len(got), got, want)
	}
}

// The first page weighs less than 150 KB transferred in all — the page, its
// assets and the API calls of a cold load, summed from the browser's
// resource timings (transferSize: bytes on the wire, headers included) — and
// loads nothing from another host; a signed-in reload shows the feed
// within a second.
func TestBrowserBudget(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	authorTok, readerTok := in.authorAndReader()
	for i := range 30 {
		in.post(authorTok, fmt.Sprintf("post %d %s", i, strings.Repeat("words ", 40)))
	}
	tb := b.tab("reader", 1000, 800)
	tb.signIn(in.url, readerTok)
	tb.wait("a page of posts", `document.querySelectorAll('#view .list article').length >= 20`)
	type entry struct {
		Name string  `json:"name"`
		Size float64 `json:"size"`
	}
	entries := js[[]entry](tb, `performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource')).map(e => ({name: e.name, size: e.transferSize}))`)
	total := 0.0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, in.url+"/") {
			t.Errorf("the page loaded %s from another host", e.Name)
		}
		total += e.Size
	}
	t.Logf("cold load of / with sign-in and the first feed page: %.0f bytes in %d requests: %v", total, len(entries), entries)
	if total >= 150*1024 || total < 5000 {
		t.Errorf("transferred %.0f bytes; want under 150 KB (and more than nothing: the sum is broken)", total)
	}

	// The best of three reloads: what the app takes, not what a machine
	// busy with the rest of the suite adds to one of them (one reload took
	// 1,019 ms so in a CI run, where the same app takes 200 to 400 ms).
	best := math.Inf(1)
	var all []float64
	for range 3 {
		tb.do(chromedp.Reload())
		ms := js[float64](tb, `new Promise(done => { const f = () => document.querySelectorAll('#view .list article').length >= 20 ? done(performance.now()) : requestAnimationFrame(f); f(); })`)
		all = append(all, ms)
		best = min(best, ms)
	}
	t.Logf("signed-in reload to the feed on screen: best %.0f ms of %.0f", best, all)
	if best > 1000 {
		t.Errorf("the feed showed %.0f ms after the navigation at best (%.0f); want within 1 s", best, all)
	}
}

// The console: the switches with a confirmation, and a user opened in the
// app by a token handed to the new tab without a URL.
func TestBrowserConsole(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	ops := b.tab("console", 1100, 900)
	ops.do(chromedp.Navigate(in.url+"/ops"), chromedp.WaitVisible(chromedp.CSS("#admin-token")),
		chromedp.SetValue(chromedp.CSS("#admin-token"), in.admin), chromedp.Click(chromedp.CSS("#signin button")))
	ops.wait("the switches", `!!document.querySelector('#switch-L2')`)
	ops.wait("the figures", `!!document.querySelector('#fig-publish') && document.querySelectorAll('#tables tr').length > 3`)

	degraded := func() bool {
		r := in.must(200, "GET", "/v1/admin/degradation", in.admin, nil)
		sw, _ := r.body["switches"].(map[string]any)
		return sw["L2"] == true
	}
	for _, on := range []bool{true, false} {
		ops.do(chromedp.Click(chromedp.CSS("#switch-L2")))
		ops.wait("the confirmation", `!!document.querySelector('dialog[open] .ok')`)
		if degraded() == on {
			t.Fatal("the switch changed before the confirmation")
		}
		ops.do(chromedp.Click(chromedp.CSS("dialog[open] .ok")))
		ops.wait("the switch's new state", fmt.Sprintf(`document.querySelector('#switch-L2')?.getAttribute('aria-pressed') === '%v'`, on))
		if got := degraded(); got != on {
			t.Fatalf("after the console turned L2 %v, GET /v1/admin/degradation says %v", on, got)
		}
		if on {
			js[bool](ops, `window.scrollTo(0, 0), true`)
			ops.shot("console")
		}
	}

	// Create a user and open the app as them in a new tab.
	ops.do(chromedp.SetValue(chromedp.CSS("#new-name"), "carol"), chromedp.Click(chromedp.CSS("#create-user button")))
	ops.wait("carol in the list", `!!document.querySelector('#users .open-as')`)
	carolID := js[string](ops, `document.querySelector('#users .open-as').dataset.id`)
	opened := chromedp.WaitNewTarget(ops.ctx, func(i *target.Info) bool { return strings.HasPrefix(i.URL, in.url) })
	ops.do(chromedp.Click(chromedp.CSS("#users .open-as")))
	var id target.ID
	select {
	case id = <-opened:
	case <-time.After(15 * time.Second):
		t.Fatal("the console opened no tab")
	}
	app := ops.attach("carol's tab", id)
	app.wait("carol signed in", `!document.querySelector('#nav')?.hidden && document.querySelector('#me-link')?.getAttribute('href') === '/users/`+carolID+`'`)
	got := js[string](app, `location.href + ' ' + JSON.stringify(Object.keys(sessionStorage).sort())`)
	if got != in.url+`/ ["feedd.token"]` {
		t.Fatalf("carol's tab: %s; want the app's URL with no token in it, and the user token but not the admin token in storage", got)
	}
	tok := js[string](app, `sessionStorage.getItem('feedd.token')`)
	in.must(201, "POST", "/v1/posts", tok, map[string]any{"content": "carol was here"})
	app.shot("app-as-carol")
}

// The app rides out a restart of feedd: its stream reconnects with a
// fresh ticket and the last post it saw, and a post published meanwhile
// arrives once.
func TestBrowserReconnect(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": dir}, nil)
	authorTok, readerTok := in.authorAndReader()
	first := in.post(authorTok, "before the restart")
	in.feedEventually(readerTok, 20, []string{first})

	tb := b.tab("reader", 1000, 800)
	tb.signIn(in.url, readerTok)
	tb.liveOn()
	in.stop()
	tb.wait("the stream to drop", `document.body.dataset.live === 'off'`)
	again := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": dir}, nil, "FEEDD_ADDR", strings.TrimPrefix(in.url, "http://"))
	missed := again.post(authorTok, "while the app reconnected")
	tb.wait("the pill", `(p => p && !p.hidden && p.textContent === '1 new post')(document.querySelector('#pill'))`)
	tb.do(chromedp.Click(chromedp.CSS("#pill")))
	tb.wait("the post on top", `document.querySelector('#view .list article')?.dataset.id === '`+missed+`'`)
	if got := tb.feedIDs(); !slices.Equal(got, []string{missed, first}) {
		t.Fatalf("after the reconnect the page shows %v; want [%s %s]", got, missed, first)
	}
}

// A rate limit is told in words, with when to try again (from
// Retry-After), and the unsent post stays in the compose box.
func TestBrowserRateLimit(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir(), "FEEDD_RATE_USER_WRITE": "0.1:2"}, nil)
	_, tok := in.user("hasty")
	tb := b.tab("hasty", 1000, 800)
	tb.signIn(in.url, tok)
	tb.liveOn() // its stream ticket was the first write of two
	for i, text := range []string{"first", "second"} {
		tb.do(chromedp.SetValue(chromedp.CSS("#compose"), text), chromedp.Click(chromedp.CSS(".compose button")))
		if i == 0 {
			tb.wait("the first post", `document.querySelector('#view .list article .content')?.textContent === 'first'`)
		}
	}
	tb.wait("the rate limit in words", `/^Too many requests: slow down and try again in \d+ seconds? \(at .+\)\.$/.test(document.querySelector('#notice')?.textContent)`)
	if got := js[string](tb, `document.querySelector('#compose').value`); got != "second" {
		t.Fatalf("after the 429 the compose box holds %q; want the unsent post", got)
	}
	tb.shot("rate-limited")
}

// pillHidden is a page expression: no "new posts" pill shows.
const pillHidden = `(p => !p || p.hidden)(document.querySelector('#pill'))`

// An author's own post is no news to them: posted from the app, it shows
// once, on top, and no pill counts it, even though the stream's event for
// it may come before the publish's answer. A post of someone they follow,
// published after it, is what the pill then counts, alone.
func TestBrowserOwnPost(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	bobID, bobTok := in.user("bob")
	_, aliceTok := in.user("alice")
	in.follow(aliceTok, bobID)

	alice := b.tab("alice", 1000, 800)
	alice.signIn(in.url, aliceTok)
	alice.liveOn()
	// The publish's answer comes 2.5 s late, so that the stream's event
	// for the post surely comes first, as it often does on its own.
	js[bool](alice, `(() => {
		const f = window.fetch;
		window.fetch = (u, init) => f(u, init).then(r => String(u) === '/v1/posts' && init.method === 'POST' ? new Promise(ok => setTimeout(() => ok(r), 2500)) : r);
		return true;
	})()`)
	alice.do(chromedp.SetValue(chromedp.CSS("#compose"), "my own post"), chromedp.Click(chromedp.CSS(".compose button")))
	alice.wait("her post on top", `document.querySelector('#view .list article .content')?.textContent === 'my own post'`)
	alice.wait("the publish's answer", `!document.querySelector('.compose button').disabled`)
	own := alice.feedIDs()[0]
	if !js[bool](alice, pillHidden) {
		t.Fatalf("after her own post the pill says %q; want no pill", js[string](alice, `document.querySelector('#pill').textContent`))
	}
	// The stream sends bob's post after hers: once it is in the pill, hers
	// has come through the stream too.
	bobs := in.post(bobTok, "bob's post")
	alice.wait("the pill for bob's post", `(p => p && !p.hidden && p.textContent === '1 new post')(document.querySelector('#pill'))`)
	if got := alice.feedIDs(); !slices.Equal(got, []string{own}) {
		t.Fatalf("before the pill is clicked the page shows %v; want her post once [%s]", got, own)
	}
	alice.do(chromedp.Click(chromedp.CSS("#pill")))
	alice.wait("no pill", pillHidden)
	if got := alice.feedIDs(); !slices.Equal(got, []string{bobs, own}) {
		t.Fatalf("after the pill the page shows %v; want [%s %s]", got, bobs, own)
	}
}

// An edit reaches an open home page: the stream's update event shows the
// post's new content where it was, marked edited, and nothing twice.
func TestBrowserEdit(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	authorTok, readerTok := in.authorAndReader()
	older := in.post(authorTok, "an older post")
	in.feedEventually(readerTok, 20, []string{older})

	tb := b.tab("reader", 1000, 800)
	tb.signIn(in.url, readerTok)
	tb.liveOn()
	id := in.post(authorTok, "frist post")
	tb.wait("the pill", `(p => p && !p.hidden && p.textContent === '1 new post')(document.querySelector('#pill'))`)
	tb.do(chromedp.Click(chromedp.CSS("#pill")))
	article := `document.querySelector('#view .list article[data-id="` + id + `"]')`
	tb.wait("the post on top", article+`?.querySelector('.content').textContent === 'frist post'`)
	if js[bool](tb, `!!`+article+`.querySelector('.edited')`) {
		t.Fatal("a post never edited is marked edited")
	}
	in.must(200, "PATCH", "/v1/posts/"+id, authorTok, map[string]any{"content": "first post"})
	tb.wait("the edit", article+`?.querySelector('.content').textContent === 'first post' && !!`+article+`.querySelector('.edited')`)
	if got := tb.feedIDs(); !slices.Equal(got, []string{id, older}) {
		t.Fatalf("after the edit the page shows %v; want [%s %s]", got, id, older)
	}
	if !js[bool](tb, pillHidden) {
		t.Fatal("the edit shows as a new post in the pill")
	}
	tb.shot("edited")
}

// The sign-in form says what is wrong with what was typed, in feedd's
// words: something that is not a token is malformed and stays here (it
// is not taken for the admin token); a user token with a few characters
// changed does not verify. The admin token goes to the console.
func TestBrowserSignIn(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	_, tok := in.user("alice")
	head, rest, _ := strings.Cut(tok, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	c := byte('A')
	if sig[5] == 'A' {
		c = 'B'
	}
	tampered := head + "." + payload + "." + sig[:5] + string(c) + sig[6:]

	tb := b.tab("visitor", 1000, 800)
	for _, tt := range []struct{ typed, says string }{
		{"hunter2", "malformed"},
		{tampered, "signature does not verify"},
	} {
		tb.do(chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SetValue(chromedp.CSS("#token"), tt.typed), chromedp.Click(chromedp.CSS("#signin button")))
		tb.wait("why the token is refused", `(n => n && !n.hidden && n.textContent.includes(`+quote(tt.says)+`))(document.querySelector('#notice'))`)
		got := js[string](tb, `location.pathname + ' ' + JSON.stringify(Object.keys(sessionStorage))`)
		if got != "/ []" {
			t.Errorf("after signing in with %q: %s; want / and nothing stored", tt.typed, got)
		}
		if n := js[string](tb, `document.querySelector('#notice').textContent`); strings.Contains(n, "expired") || strings.Contains(n, "revoked") {
			t.Errorf("after signing in with %q the page says %q; want only what is wrong", tt.typed, n)
		}
	}
	tb.shot("signin-refused")
	tb.do(chromedp.SetValue(chromedp.CSS("#token"), in.admin), chromedp.Click(chromedp.CSS("#signin button")))
	// The page navigates: ask again until the console answers.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.pathname === '/ops' && !!document.querySelector('#switch-L2')`))
		cancel()
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after signing in with the admin token: not the console (%v); the page says: %s", err, tb.text())
		}
	}
}

// Views never race: a view that answers after the reader has moved on
// shows nothing and stops, and the view moved to keeps the page with its
// own list and stream; leaving a view stops its list and stream.
func TestBrowserNavigationRace(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	_, readerTok := in.authorAndReader()
	slowID, _ := in.user("slow")
	tb := b.tab("reader", 1000, 800)
	tb.signIn(in.url, readerTok)
	tb.liveOn()
	// Count the streams and list observers open, and make the slow user's
	// page answer late (3 s).
	js[bool](tb, `(() => {
		window.sources = [];
		const ES = window.EventSource;
		window.EventSource = class extends ES { constructor(...a) { super(...a); sources.push(this); } };
		window.observers = [];
		const IO = window.IntersectionObserver;
		window.IntersectionObserver = class extends IO {
			constructor(...a) { super(...a); this.live = true; observers.push(this); }
			disconnect() { this.live = false; super.disconnect(); }
		};
		const f = window.fetch;
		window.fetch = (u, init) => String(u) === '/v1/users/`+slowID+`' ? new Promise(r => setTimeout(r, 3000)).then(() => f(u, init)) : f(u, init);
		return true;
	})()`)
	open := func() (streams, lists int) {
		v := js[[]int](tb, `[sources.filter(s => s.readyState !== EventSource.CLOSED).length, observers.filter(o => o.live).length]`)
		return v[0], v[1]
	}
	// To the slow page, and home again before it answers.
	js[bool](tb, `document.querySelector('#goto-id').value = '`+slowID+`', document.querySelector('#goto button').click(), document.querySelector('nav a[href="/"]').click(), true`)
	tb.wait("home again", `location.pathname === '/' && !!document.querySelector('#compose')`)
	tb.liveOn()
	time.Sleep(4 * time.Second) // past the slow answer
	if got := js[string](tb, `location.pathname + ' ' + !!document.querySelector('#compose') + ' ' + !!document.querySelector('.profile')`); got != "/ true false" {
		t.Fatalf("after the slow page answered: %s; want home, and no profile", got)
	}
	if s, l := open(); s != 1 || l != 1 {
		t.Fatalf("home open after a raced navigation: %d streams and %d lists open; want 1 and 1", s, l)
	}
	tb.do(chromedp.Click(chromedp.CSS(`nav a[href="/top"]`)))
	tb.wait("the top page", `!!document.querySelector('#window') && document.querySelector('#view .end')?.dataset.state !== 'loading'`)
	if s, l := open(); s != 0 || l != 1 {
		t.Fatalf("on the top page: %d streams and %d lists open; want home's stream stopped, and top's list alone", s, l)
	}
}

// The ranked view: the boosted post first, the author alone sees its
// weight, and a ranking that expired under the reader is ranked afresh
// (410 cursor_expired) with a word, not an error.
func TestBrowserRanked(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil, "FEEDD_RANK_SNAPSHOT_TTL", "1s")
	bobID, bobTok := in.user("bob")
	_, aliceTok := in.user("alice")
	in.follow(aliceTok, bobID)
	var latest []string
	for i := range 25 {
		latest = append([]string{in.post(bobTok, fmt.Sprintf("post %d", i))}, latest...)
	}
	boost := 50.0
	boosted, err := in.as(bobTok).CreatePost(context.Background(), client.CreatePostParams{Content: "boosted", Weight: &boost})
	if err != nil {
		t.Fatal(err)
	}
	in.feedEventually(aliceTok, 30, append([]string{boosted.ID.String()}, latest...))

	alice := b.tab("alice", 1000, 800)
	alice.signIn(in.url, aliceTok)
	alice.do(chromedp.Click(chromedp.CSS(`nav a[href="/ranked"]`)))
	alice.wait("the boosted post first", `(a => a && a.dataset.id === '`+boosted.ID.String()+`')(document.querySelector('#view .list article'))`)
	if n := js[int](alice, `document.querySelectorAll('#view .list article .weight').length`); n != 0 {
		t.Fatalf("alice sees %d weights on bob's posts; want none", n)
	}
	if n := len(alice.feedIDs()); n != 20 {
		t.Fatalf("the first ranked screen shows %d posts; want a page of 20", n)
	}
	// The ranking expires (1 s here); the next page is asked for on
	// scroll, answered 410, and the view ranks afresh.
	time.Sleep(1500 * time.Millisecond)
	js[bool](alice, `window.scrollTo(0, document.documentElement.scrollHeight), true`)
	alice.wait("the notice of a fresh ranking", `document.getElementById('notice')?.textContent === 'That ranking expired, so here is a fresh one.'`)
	alice.wait("the fresh ranking's first page", `document.querySelectorAll('#view .list article').length >= 20 && document.querySelector('#view .list article').dataset.id === '`+boosted.ID.String()+`'`)
	js[bool](alice, `window.scrollTo(0, 0), true`)
	alice.shot("ranked")

	bob := b.tab("bob", 1000, 800)
	bob.signIn(in.url, bobTok)
	bob.do(chromedp.Navigate(in.url + "/users/" + bobID))
	bob.wait("bob's boosted post with its weight", `document.querySelector('#view article[data-id="`+boosted.ID.String()+`"] .weight')?.textContent === ' · weight 50'`)
}

// The lists views: a list made in the app, a member added by id, whose
// posts the list shows though the owner does not follow them; made
// exclusive, a followed member leaves the home feed.
func TestBrowserLists(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	bobID, bobTok := in.user("bob")
	carolID, carolTok := in.user("carol")
	_, aliceTok := in.user("alice")
	in.follow(aliceTok, carolID)
	bobs := in.post(bobTok, "bob, not followed")
	carols := in.post(carolTok, "carol, followed")
	in.feedEventually(aliceTok, 10, []string{carols})

	alice := b.tab("alice", 1000, 800)
	alice.signIn(in.url, aliceTok)
	alice.do(chromedp.Click(chromedp.CSS(`nav a[href="/lists"]`)))
	alice.do(chromedp.SetValue(chromedp.CSS("#list-name"), "friends"), chromedp.Click(chromedp.CSS("#new-list button")))
	alice.wait("the new list", `[...document.querySelectorAll('#lists a')].some(a => a.textContent === 'friends')`)
	alice.do(chromedp.Click(chromedp.CSS(`#lists a`)))
	alice.wait("the list's page", `document.querySelector('#view h1')?.textContent === 'friends'`)
	for _, id := range []string{bobID, carolID} {
		alice.do(chromedp.SetValue(chromedp.CSS("#member-id"), id), chromedp.Click(chromedp.CSS("#add-member button")))
		alice.wait("the member "+id, `[...document.querySelectorAll('#view .list .user a')].some(a => a.getAttribute('href') === '/users/`+id+`')`)
	}
	alice.do(chromedp.Click(chromedp.CSS(`nav.tabs button[data-tab="feed"]`)))
	alice.wait("both members' posts", `[...document.querySelectorAll('#view .list article')].map(a => a.dataset.id).join() === '`+carols+`,`+bobs+`'`)
	// The list's live stream: a member's new post waits behind the pill.
	alice.wait("the list's stream", `document.body.dataset.live === 'on'`)
	bobNew := in.post(bobTok, "bob, live")
	alice.wait("the pill", `(p => p && !p.hidden && p.textContent === '1 new post')(document.querySelector('#pill'))`)
	alice.do(chromedp.Click(chromedp.CSS("#pill")))
	alice.wait("bob's live post on top", `document.querySelector('#view .list article')?.dataset.id === '`+bobNew+`'`)
	alice.do(chromedp.Click(chromedp.CSS("#exclusive")))
	testenv.Eventually(t, 10*time.Second, "carol out of alice's home feed", func() bool {
		return len(in.feedAll(aliceTok, 10)) == 0
	})
	alice.shot("list")
}

// The people view: a search typed in the box lists handle matches before
// name matches, with their @handles, and leaves out a user blocked; a
// user's page shows the handle and the follow button's state, which it
// reads from the relationships route, not from the following list.
func TestBrowserPeople(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	_, aliceTok := in.user("alice")
	bob := in.must(201, "POST", "/v1/users", in.admin, map[string]any{"name": "Bob", "handle": "bo_b"}).str("id")
	in.must(201, "POST", "/v1/users", in.admin, map[string]any{"name": "Bonnie"})
	mallory := in.must(201, "POST", "/v1/users", in.admin, map[string]any{"name": "Bo Mallory", "handle": "bo_m"}).str("id")
	in.follow(aliceTok, bob)
	in.must(204, "PUT", "/v1/me/blocks/"+mallory, aliceTok, nil)
	bobTok := in.must(201, "POST", "/v1/users/"+bob+"/tokens", in.admin, nil).str("token")

	alice := b.tab("alice", 1000, 800)
	alice.signIn(in.url, aliceTok)
	alice.do(chromedp.Click(chromedp.CSS(`nav a[href="/search"]`)), chromedp.WaitVisible(chromedp.CSS("#people-q")),
		chromedp.SendKeys(chromedp.CSS("#people-q"), "Bo"))
	alice.wait("bob, then bonnie", `[...document.querySelectorAll('#people .user')].map(u => u.textContent.split(' ')[0] + (u.querySelector('.handle')?.textContent || '')).join() === 'Bob @bo_b,Bonnie'`)
	alice.shot("people")
	alice.do(chromedp.Click(chromedp.CSS(`#people .user a[href="/users/` + bob + `"]`)))
	alice.wait("bob's page with his handle", `document.querySelector('#handle')?.textContent === '@bo_b'`)
	alice.wait("the follow button from the relationship", `document.querySelector('#follow')?.textContent === 'Unfollow' && !document.querySelector('#follow').disabled`)
	if following := js[bool](alice, `performance.getEntriesByType('resource').some(e => e.name.includes('/following'))`); following {
		t.Error("bob's page paged the following list; it should ask /v1/me/relationships/{id}")
	}
	me := js[string](alice, `document.querySelector('#me-link').getAttribute('href').split('/').pop()`)
	in.follow(bobTok, me)
	alice.do(chromedp.Navigate(in.url + "/users/" + bob))
	alice.wait("follows you", `document.querySelector('#follows-you')?.textContent === ' · follows you'`)
}

// The notifications view: the nav's badge counts the unread groups; the
// view shows likes of one post as one line ("d, c, b and 1 other liked
// your post"), a follow and a reply, newest first; opening it marks them read
// and the badge empties.
func TestBrowserNotifications(t *testing.T) {
	b := newBrowser(t)
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	aliceID, aliceTok := in.user("alice")
	post := in.post(aliceTok, "like me")
	for _, n := range []string{"a", "b", "c", "d"} {
		_, tok := in.user(n)
		in.must(200, "PUT", "/v1/posts/"+post+"/like", tok, nil)
	}
	_, danTok := in.user("dan")
	in.follow(danTok, aliceID)
	reply := in.must(201, "POST", "/v1/posts", danTok, map[string]any{"content": "dan's answer", "in_reply_to_id": post}).str("id")
	testenv.Eventually(t, 20*time.Second, "three groups", func() bool {
		r := in.must(200, "GET", "/v1/me/notifications", aliceTok, nil)
		return len(r.items()) == 3 && r.items()[2]["actor_count"] == float64(4)
	})

	alice := b.tab("alice", 1000, 800)
	alice.signIn(in.url, aliceTok)
	alice.wait("the unread badge", `document.querySelector('#unread-notifications')?.textContent === '3'`)
	alice.do(chromedp.Click(chromedp.CSS(`nav a[href="/notifications"]`)))
	alice.wait("the groups", `document.querySelectorAll('#view .notification').length === 3`)
	lines := js[[]string](alice, `[...document.querySelectorAll('#view .notification')].map(n => n.dataset.type + ': ' + n.querySelector('p').textContent.split(' · ')[0])`)
	want := []string{"reply: dan replied to your post", "follow: dan followed you", "like: d, c, b and 1 other liked your post"}
	if !slices.Equal(lines, want) {
		t.Fatalf("notifications shown: %q; want %q", lines, want)
	}
	if got := js[string](alice, `document.querySelector('#view .notification[data-type="reply"] .about').getAttribute('href')`); got != "/posts/"+reply {
		t.Errorf("the reply's line links to %s; want /posts/%s", got, reply)
	}
	alice.wait("the badge emptied", `document.querySelector('#unread-notifications')?.textContent === ''`)
	if r := in.must(200, "GET", "/v1/me/markers/notifications", aliceTok, nil); r.body["unread_count"] != float64(0) {
		t.Fatalf("after opening the view the marker says %s; want 0 unread", r.raw)
	}
	alice.shot("notifications")
}
