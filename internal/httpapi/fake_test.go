package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// call is one call of a service as the fake saw it.
type call struct {
	method string
	args   []any
}

func (c call) String() string { return fmt.Sprintf("%s%v", c.method, c.args) }

// services is what NewServer takes: the timeline and the likes.
type services interface {
	Timeline
	Likes
}

// fakeService is an in-memory Timeline and Likes (one fake, so that likes
// see its posts) that records every call, so tests can assert what the
// API asked for (the actor is the token's sub) and that bad input never
// reached a service at all.
type fakeService struct {
	mu       sync.Mutex
	log      []call
	now      time.Time
	nextID   int64
	users    map[int64]feed.User
	posts    map[int64]feed.Post
	follows  map[int64]map[int64]bool // follower -> followees
	idem     map[string]fakeKey       // author/key -> its post and fingerprint
	external map[string]int64         // author/external id -> its post
	fail     map[string]error         // method -> error it returns
	panicOn  map[string]bool          // method -> it panics
	readyErr error
	likes    map[int64]map[int64]int64 // post -> liker -> like sequence
	likeSeq  int64
	markers  map[int64]feed.Marker
	gens     map[int64]int64   // user -> token generation, 0 when absent
	feedNext int64             // set: Feed stops short there, as a filtered page does
	mutes    map[[2]int64]bool // (user, target)
	blocks   map[[2]int64]bool // (blocker, blocked)
	purges   map[int64]feed.Purge
	lists    map[int64]*fakeList // by id
	settings map[int64]feed.Settings
	// announcer, when set, is told of follows, mutes, blocks, edits and
	// deletes, as the timeline tells the live streams.
	announcer feed.Announcer
}

// announced tells the announcer of a change that err says was made.
func (f *fakeService) announced(err error, tell func(a feed.Announcer) error) error {
	if err == nil && f.announcer != nil {
		return tell(f.announcer)
	}
	return err
}

// followsChanged is announced's FollowsChanged of readers.
func (f *fakeService) followsChanged(ctx context.Context, err error, readers ...int64) error {
	return f.announced(err, func(a feed.Announcer) error {
		for _, r := range readers {
			if err := a.FollowsChanged(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func newFakeService(now time.Time) *fakeService {
	return &fakeService{
		now:      now,
		nextID:   1000,
		users:    map[int64]feed.User{},
		posts:    map[int64]feed.Post{},
		follows:  map[int64]map[int64]bool{},
		idem:     map[string]fakeKey{},
		external: map[string]int64{},
		fail:     map[string]error{},
		panicOn:  map[string]bool{},
		mutes:    map[[2]int64]bool{},
		blocks:   map[[2]int64]bool{},
	}
}

// seedUser adds a user without recording a call.
func (f *fakeService) seedUser(id int64, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[id] = feed.User{ID: id, Name: name, CreatedAt: f.now}
}

// seedFollow adds a follow without recording a call.
func (f *fakeService) seedFollow(follower, followee int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.followLocked(follower, followee)
}

// seedPost adds a post without recording a call.
func (f *fakeService) seedPost(author int64, content string) feed.Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.publishLocked(author, content)
}

func (f *fakeService) setFail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = err
}

func (f *fakeService) setPanic(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.panicOn[method] = true
}

func (f *fakeService) setReady(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readyErr = err
}

// calls returns the recorded calls and forgets them.
func (f *fakeService) calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.log
	f.log = nil
	return c
}

// record logs a call and returns the error the test asked for; the caller
// holds the lock.
func (f *fakeService) record(method string, args ...any) error {
	f.log = append(f.log, call{method, args})
	if f.panicOn[method] {
		panic("fake: " + method + " exploded")
	}
	return f.fail[method]
}

func (f *fakeService) followLocked(follower, followee int64) {
	if f.follows[follower] == nil {
		f.follows[follower] = map[int64]bool{}
	}
	f.follows[follower][followee] = true
}

func (f *fakeService) publishLocked(author int64, content string) feed.Post {
	f.nextID++
	p := feed.Post{
		ID:        f.nextID,
		AuthorID:  author,
		Content:   content,
		CreatedAt: f.now.Add(time.Duration(f.nextID) * time.Millisecond),
	}
	f.posts[p.ID] = p
	return p
}

func (f *fakeService) withCounts(u feed.User) feed.User {
	u.FollowingCount = int64(len(f.follows[u.ID]))
	u.FollowerCount = 0
	for _, followees := range f.follows {
		if followees[u.ID] {
			u.FollowerCount++
		}
	}
	return u
}

func (f *fakeService) CreateUser(ctx context.Context, id int64, name, handle string) (feed.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{id, name}
	if handle != "" {
		args = append(args, handle)
	}
	if err := f.record("CreateUser", args...); err != nil {
		return feed.User{}, err
	}
	if id == 0 {
		f.nextID++
		id = f.nextID
	}
	if _, ok := f.users[id]; ok {
		return feed.User{}, feed.Errorf(feed.ECONFLICT, "user %d already exists", id)
	}
	handle = strings.ToLower(handle)
	if f.handleHolder(handle) != 0 {
		return feed.User{}, feed.HandleTaken(handle)
	}
	u := feed.User{ID: id, Name: name, Handle: handle, CreatedAt: f.now}
	f.users[id] = u
	return u, nil
}

func (f *fakeService) User(ctx context.Context, id int64) (feed.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("User", id); err != nil {
		return feed.User{}, err
	}
	u, ok := f.users[id]
	if !ok {
		return feed.User{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", id)
	}
	return f.withCounts(u), nil
}

func (f *fakeService) userPage(ids []int64, after int64, n int) ([]feed.User, bool) {
	slices.Sort(ids)
	var out []feed.User
	for _, id := range ids {
		if id > after {
			out = append(out, f.withCounts(f.users[id]))
		}
	}
	if len(out) > n {
		return out[:n], true
	}
	return out, false
}

func (f *fakeService) Followers(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Followers", user, after, n); err != nil {
		return nil, false, err
	}
	var ids []int64
	for follower, followees := range f.follows {
		if followees[user] {
			ids = append(ids, follower)
		}
	}
	users, more := f.userPage(ids, after, n)
	return users, more, nil
}

func (f *fakeService) Following(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Following", user, after, n); err != nil {
		return nil, false, err
	}
	var ids []int64
	for followee := range f.follows[user] {
		ids = append(ids, followee)
	}
	users, more := f.userPage(ids, after, n)
	return users, more, nil
}

func (f *fakeService) Follow(ctx context.Context, follower, followee int64) error {
	return f.followsChanged(ctx, f.follow(follower, followee), follower)
}

func (f *fakeService) follow(follower, followee int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Follow", follower, followee); err != nil {
		return err
	}
	if err := feed.CheckNotSelf("follow", follower, followee); err != nil {
		return err
	}
	if _, ok := f.users[followee]; !ok {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", followee)
	}
	if f.blocks[[2]int64{follower, followee}] || f.blocks[[2]int64{followee, follower}] {
		return feed.Errorf(feed.EBLOCKED, "a block forbids following")
	}
	f.followLocked(follower, followee)
	return nil
}

func (f *fakeService) Unfollow(ctx context.Context, follower, followee int64) error {
	return f.followsChanged(ctx, f.unfollow(follower, followee), follower)
}

func (f *fakeService) unfollow(follower, followee int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Unfollow", follower, followee); err != nil {
		return err
	}
	delete(f.follows[follower], followee)
	return nil
}

// FollowBatch plays the pairs in order on the fake's edges, as the store
// does in one transaction.
func (f *fakeService) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) ([]string, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("FollowBatch", len(follow), len(unfollow)); err != nil {
		return nil, nil, err
	}
	if err := feed.CheckFollowBatch(follow, unfollow); err != nil {
		return nil, nil, err
	}
	known := func(e feed.Edge) bool {
		_, a := f.users[e.Follower]
		_, b := f.users[e.Followee]
		return a && b
	}
	followed := make([]string, len(follow))
	for i, e := range follow {
		switch {
		case !known(e):
			followed[i] = feed.EdgeUnknownUser
		case f.blocks[[2]int64{e.Follower, e.Followee}] || f.blocks[[2]int64{e.Followee, e.Follower}]:
			followed[i] = feed.EdgeBlocked
		case f.follows[e.Follower][e.Followee]:
			followed[i] = feed.EdgeExists
		default:
			followed[i] = feed.EdgeCreated
			f.followLocked(e.Follower, e.Followee)
		}
	}
	unfollowed := make([]string, len(unfollow))
	for i, e := range unfollow {
		switch {
		case !known(e):
			unfollowed[i] = feed.EdgeUnknownUser
		case f.follows[e.Follower][e.Followee]:
			unfollowed[i] = feed.EdgeRemoved
			delete(f.follows[e.Follower], e.Followee)
		default:
			unfollowed[i] = feed.EdgeAbsent
		}
	}
	return followed, unfollowed, nil
}

// Export writes the fake's user and their follows in export's format, for
// the handler's tests; package export has its own.
func (f *fakeService) Export(ctx context.Context, user int64, w io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Export", user); err != nil {
		return err
	}
	u, ok := f.users[user]
	if !ok {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	fmt.Fprintf(w, "{\"kind\":\"user\",\"id\":\"%d\",\"name\":%q}\n", u.ID, u.Name)
	for _, followee := range slices.Sorted(maps.Keys(f.follows[user])) {
		fmt.Fprintf(w, "{\"kind\":\"follow\",\"follower_id\":\"%d\",\"followee_id\":\"%d\"}\n", user, followee)
	}
	if err := f.fail["Export/after"]; err != nil {
		return err
	}
	return nil
}

// fakeKey is an idempotency key's record.
type fakeKey struct {
	post        int64
	fingerprint []byte
}

// Publish keeps the store's idempotency rules (sqlstore.CreatePost),
// without expiry.
func (f *fakeService) Publish(ctx context.Context, author int64, d feed.Draft, idem feed.Idempotency) (feed.Post, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{author, d.Content, idem.Key}
	if d.Data != "" {
		args = append(args, d.Data)
	}
	if d.ExternalID != "" {
		args = append(args, "external_id="+d.ExternalID)
	}
	if !d.Weight.IsDefault() {
		args = append(args, "weight="+d.Weight.String())
	}
	if err := f.record("Publish", args...); err != nil {
		return feed.Post{}, err
	}
	key := fmt.Sprintf("%d/%s", author, idem.Key)
	if rec, ok := f.idem[key]; ok && idem.Key != "" {
		switch p := f.posts[rec.post]; {
		case !bytes.Equal(rec.fingerprint, idem.Fingerprint):
			return feed.Post{}, feed.Errorf(feed.EKEYREUSED, "reused")
		case p.Deleted:
			return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "deleted")
		default:
			return p, nil
		}
	}
	if idem.Key != "" && len(idem.Fingerprint) != feed.FingerprintSize {
		return feed.Post{}, fmt.Errorf("fake: publish with key %q and no fingerprint", idem.Key)
	}
	extKey := fmt.Sprintf("%d/%s", author, d.ExternalID)
	if id, ok := f.external[extKey]; ok && d.ExternalID != "" {
		return feed.Post{}, fmt.Errorf("fake: publish: %w", &feed.ExternalIDExistsError{PostID: id, ExternalID: d.ExternalID})
	}
	p := f.publishLocked(author, d.Content)
	p.Data, p.ExternalID, p.Weight = d.Data, d.ExternalID, d.Weight
	f.posts[p.ID] = p
	f.idem[key] = fakeKey{p.ID, idem.Fingerprint}
	if d.ExternalID != "" {
		f.external[extKey] = p.ID
	}
	return p, nil
}

func (f *fakeService) EditPost(ctx context.Context, actor, id int64, e feed.PostEdit) (feed.Post, error) {
	p, err := f.editPost(actor, id, e)
	return p, f.announced(err, func(a feed.Announcer) error { return a.PostEdited(ctx, actor, id, p.Version()) })
}

func (f *fakeService) editPost(actor, id int64, e feed.PostEdit) (feed.Post, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{actor, id}
	if e.Content != nil {
		args = append(args, "content="+*e.Content)
	}
	if e.SetData {
		args = append(args, "data="+e.Data)
	}
	if e.Weight != nil {
		args = append(args, "weight="+e.Weight.String())
	}
	if err := f.record("EditPost", args...); err != nil {
		return feed.Post{}, err
	}
	p, ok := f.posts[id]
	if !ok || p.Deleted {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	if p.AuthorID != actor {
		return feed.Post{}, feed.Errorf(feed.EFORBIDDEN, "only its author can edit post %d", id)
	}
	if e.Content != nil {
		p.Content = *e.Content
	}
	if e.SetData {
		p.Data = e.Data
	}
	if e.Weight != nil {
		p.Weight = *e.Weight
	}
	p.EditedAt = f.now.Add(time.Hour)
	f.posts[id] = p
	return p, nil
}

func (f *fakeService) Post(ctx context.Context, id int64) (feed.Post, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Post", id); err != nil {
		return feed.Post{}, err
	}
	p, ok := f.posts[id]
	if !ok || p.Deleted {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return p, nil
}

// PostVersion: the fake holds one copy of each post, the newest.
func (f *fakeService) PostVersion(ctx context.Context, id, _ int64) (feed.Post, error) {
	return f.Post(ctx, id)
}

func (f *fakeService) DeletePost(ctx context.Context, actor, id int64) error {
	err := f.deletePost(actor, id)
	return f.announced(err, func(a feed.Announcer) error { return a.PostDeleted(ctx, actor, id) })
}

func (f *fakeService) deletePost(actor, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DeletePost", actor, id); err != nil {
		return err
	}
	p, ok := f.posts[id]
	if !ok || p.Deleted {
		return feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	if p.AuthorID != actor {
		return feed.Errorf(feed.EFORBIDDEN, "only its author can delete post %d", id)
	}
	p.Deleted = true
	f.posts[id] = p
	return nil
}

// postPage returns up to n posts matching keep with ids below before,
// newest first.
func (f *fakeService) postPage(keep func(feed.Post) bool, before int64, n int) ([]feed.Post, bool) {
	var out []feed.Post
	for _, p := range f.posts {
		if !p.Deleted && keep(p) && (before == 0 || p.ID < before) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b feed.Post) int { return cmp.Compare(b.ID, a.ID) })
	if len(out) > n {
		return out[:n], true
	}
	return out, false
}

func (f *fakeService) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("AuthorPosts", author, before, n); err != nil {
		return nil, false, err
	}
	if _, ok := f.users[author]; !ok {
		return nil, false, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", author)
	}
	posts, more := f.postPage(func(p feed.Post) bool { return p.AuthorID == author }, before, n)
	return posts, more, nil
}

func (f *fakeService) Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Feed", reader, before, n); err != nil {
		return feed.Page{}, err
	}
	if f.feedNext != 0 && before == 0 {
		return feed.Page{Next: f.feedNext}, nil
	}
	followees := f.follows[reader]
	return feed.PageOf(f.postPage(func(p feed.Post) bool { return followees[p.AuthorID] }, before, n)), nil
}

// RankedFeed is the fake's ranked feed: the latest feed's posts (up to
// 100) most liked first, paged by index in snapshot 1 (position
// 1<<16|index); any other snapshot has expired.
func (f *fakeService) RankedFeed(ctx context.Context, reader, pos int64, n int) (feed.Page, error) {
	if pos != 0 && pos>>16 != 1 {
		return feed.Page{}, feed.Errorf(feed.ECURSOREXPIRED, "this ranked feed's snapshot expired")
	}
	latest, err := f.Feed(ctx, reader, 0, 100)
	if err != nil {
		return feed.Page{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ranked := slices.Clone(latest.Posts)
	slices.SortStableFunc(ranked, func(a, b feed.Post) int { return len(f.likes[b.ID]) - len(f.likes[a.ID]) })
	from := int(pos & (1<<16 - 1))
	to := min(from+n, len(ranked))
	pg := feed.Page{Posts: ranked[from:to]}
	if to < len(ranked) {
		pg.Next = 1<<16 | int64(to)
	}
	return pg, nil
}

func (f *fakeService) FeedSince(ctx context.Context, reader, after int64, n int) ([]feed.Post, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("FeedSince", reader, after, n); err != nil {
		return nil, false, err
	}
	followees := f.follows[reader]
	posts, more := f.postPage(func(p feed.Post) bool { return p.ID > after && followees[p.AuthorID] }, 0, n)
	return posts, more, nil
}

func (f *fakeService) Ready(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyErr
}

var _ services = (*fakeService)(nil)

// likesOf returns post's likers, creating the map; the caller holds the
// lock.
func (f *fakeService) likesOf(post int64) map[int64]int64 {
	if f.likes == nil {
		f.likes = map[int64]map[int64]int64{}
	}
	if f.likes[post] == nil {
		f.likes[post] = map[int64]int64{}
	}
	return f.likes[post]
}

func (f *fakeService) setLike(method string, user, post int64, liked bool) (feed.LikeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(method, user, post); err != nil {
		return feed.LikeState{}, err
	}
	p, ok := f.posts[post]
	if !ok || p.Deleted {
		return feed.LikeState{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", post)
	}
	likers := f.likesOf(post)
	if liked {
		if _, ok := likers[user]; !ok {
			f.likeSeq++
			likers[user] = f.likeSeq
		}
	} else {
		delete(likers, user)
	}
	return feed.LikeState{Count: int64(len(likers)), LikedByMe: liked}, nil
}

func (f *fakeService) Like(ctx context.Context, user, post int64) (feed.LikeState, error) {
	f.mu.Lock()
	p, ok := f.posts[post]
	hidden := ok && f.blockedLocked(user, p.AuthorID)
	f.mu.Unlock()
	if hidden {
		return feed.LikeState{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", post)
	}
	return f.setLike("Like", user, post, true)
}

func (f *fakeService) Unlike(ctx context.Context, user, post int64) (feed.LikeState, error) {
	return f.setLike("Unlike", user, post, false)
}

// LikeStates is not recorded: every post-showing route calls it, and the
// call logs of the other tests name the call that chose the posts.
func (f *fakeService) LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail["LikeStates"]; err != nil {
		return nil, false, err
	}
	out := map[int64]feed.LikeState{}
	for _, p := range posts {
		likers := f.likesOf(p.ID)
		_, mine := likers[viewer]
		out[p.ID] = feed.LikeState{Count: int64(len(likers)), LikedByMe: mine}
	}
	return out, false, nil
}

// blockedLocked reports whether a block stands between a and b, either
// way.
func (f *fakeService) blockedLocked(a, b int64) bool {
	return f.blocks[[2]int64{a, b}] || f.blocks[[2]int64{b, a}]
}

// PostLikers, UserLikes and TopPosts leave out what a block hides, as the
// likes service does (its read-ahead is its own test's: likes).
func (f *fakeService) PostLikers(ctx context.Context, viewer, post, version, user int64, n int) (feed.LikerPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("PostLikers", post, version, user, n); err != nil {
		return feed.LikerPage{}, err
	}
	if p, ok := f.posts[post]; !ok || p.Deleted || f.blockedLocked(viewer, p.AuthorID) {
		return feed.LikerPage{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", post)
	}
	var out []feed.Liker
	for u, v := range f.likesOf(post) {
		if (version == 0 || v < version) && !f.blockedLocked(viewer, u) {
			out = append(out, feed.Liker{User: f.users[u], Version: v})
		}
	}
	slices.SortFunc(out, func(a, b feed.Liker) int { return cmp.Compare(b.Version, a.Version) })
	if len(out) > n {
		return feed.LikerPage{Likers: out[:n], Next: out[n-1]}, nil
	}
	return feed.LikerPage{Likers: out}, nil
}

func (f *fakeService) UserLikes(ctx context.Context, viewer, user, before int64, n int) (feed.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("UserLikes", user, before, n); err != nil {
		return feed.Page{}, err
	}
	if _, ok := f.users[user]; !ok || f.blockedLocked(viewer, user) {
		return feed.Page{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	var out []feed.LikedPost
	for post, likers := range f.likes {
		if v, ok := likers[user]; ok && (before == 0 || v < before) {
			out = append(out, feed.LikedPost{Post: f.posts[post], Version: v})
		}
	}
	slices.SortFunc(out, func(a, b feed.LikedPost) int { return cmp.Compare(b.Version, a.Version) })
	var pg feed.Page
	if len(out) > n {
		out, pg.Next = out[:n], out[n-1].Version
	}
	for _, l := range out {
		if !l.Post.Deleted && !f.blockedLocked(viewer, l.Post.AuthorID) {
			pg.Posts = append(pg.Posts, l.Post)
		}
	}
	return pg, nil
}

func (f *fakeService) TopPosts(ctx context.Context, viewer int64, window string, n int) ([]feed.Post, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("TopPosts", window, n); err != nil {
		return nil, err
	}
	if window != "" && window != "7d" && window != "24h" {
		return nil, feed.Errorf(feed.EINVALID, "window must be a duration from 1s to 30d, like 24h, 90m or 7d")
	}
	var out []feed.Post
	for post, likers := range f.likes {
		if p, ok := f.posts[post]; ok && !p.Deleted && len(likers) > 0 && !f.blockedLocked(viewer, p.AuthorID) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b feed.Post) int {
		return cmp.Or(cmp.Compare(len(f.likes[b.ID]), len(f.likes[a.ID])), cmp.Compare(b.ID, a.ID))
	})
	return out[:min(n, len(out))], nil
}

// TokenGeneration and CurrentTokenGeneration are asked by the token check
// of every request, so they are not recorded: the calls a test expects are
// those of its handler. They fail as f.fail says, like the recorded
// methods.
func (f *fakeService) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	return f.generation("TokenGeneration", user)
}

func (f *fakeService) CurrentTokenGeneration(ctx context.Context, user int64) (int64, error) {
	return f.generation("CurrentTokenGeneration", user)
}

func (f *fakeService) generation(method string, user int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[method]; err != nil {
		return 0, err
	}
	if _, ok := f.users[user]; !ok {
		return 0, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	return f.gens[user], nil
}

func (f *fakeService) DeleteUser(ctx context.Context, user int64) (feed.Purge, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DeleteUser", user); err != nil {
		return feed.Purge{}, err
	}
	if p, ok := f.purges[user]; ok && !p.Done() {
		return p, nil
	}
	if _, ok := f.users[user]; !ok {
		return feed.Purge{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	delete(f.users, user)
	if f.purges == nil {
		f.purges = map[int64]feed.Purge{}
	}
	p := feed.Purge{User: user, RequestedAt: f.now}
	f.purges[user] = p
	return p, nil
}

func (f *fakeService) Purge(ctx context.Context, user int64) (feed.Purge, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Purge", user); err != nil {
		return feed.Purge{}, err
	}
	p, ok := f.purges[user]
	if !ok {
		return feed.Purge{}, feed.Errorf(feed.ENOTFOUND, "no deletion of user %d was asked", user)
	}
	return p, nil
}

func (f *fakeService) RevokeTokens(ctx context.Context, user int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RevokeTokens", user); err != nil {
		return err
	}
	if _, ok := f.users[user]; !ok {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	if f.gens == nil {
		f.gens = map[int64]int64{}
	}
	f.gens[user]++
	return nil
}

func (f *fakeService) Marker(ctx context.Context, reader int64) (feed.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Marker", reader); err != nil {
		return feed.Marker{}, err
	}
	return f.markers[reader], nil
}

// SetMarker moves the marker forward only; it counts nothing (unread 7),
// so tests can tell the field is passed through.
func (f *fakeService) SetMarker(ctx context.Context, reader, lastRead int64) (feed.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SetMarker", reader, lastRead); err != nil {
		return feed.Marker{}, err
	}
	if _, ok := f.posts[lastRead]; !ok {
		return feed.Marker{}, feed.Errorf(feed.EINVALID, "last_read_id %d is not a post", lastRead)
	}
	if f.markers == nil {
		f.markers = map[int64]feed.Marker{}
	}
	m := f.markers[reader]
	if lastRead > m.LastReadID {
		m = feed.Marker{LastReadID: lastRead, UpdatedAt: f.now, Unread: 7}
		f.markers[reader] = m
	}
	return m, nil
}

// relate sets or clears (user, target) in set as Mute, Block and their
// undoing do.
func (f *fakeService) relate(method string, set map[[2]int64]bool, user, target int64, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(method, user, target); err != nil {
		return err
	}
	if err := feed.CheckNotSelf(strings.ToLower(strings.TrimPrefix(method, "Un")), user, target); err != nil {
		return err
	}
	if _, ok := f.users[target]; !ok {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", target)
	}
	if !on {
		delete(set, [2]int64{user, target})
		return nil
	}
	set[[2]int64{user, target}] = true
	if method == "Block" {
		delete(f.follows[user], target)
		delete(f.follows[target], user)
	}
	return nil
}

func (f *fakeService) Mute(ctx context.Context, user, target int64) error {
	return f.followsChanged(ctx, f.relate("Mute", f.mutes, user, target, true), user)
}

func (f *fakeService) Unmute(ctx context.Context, user, target int64) error {
	return f.followsChanged(ctx, f.relate("Unmute", f.mutes, user, target, false), user)
}

func (f *fakeService) Block(ctx context.Context, user, target int64) error {
	return f.followsChanged(ctx, f.relate("Block", f.blocks, user, target, true), target, user)
}

func (f *fakeService) Unblock(ctx context.Context, user, target int64) error {
	return f.followsChanged(ctx, f.relate("Unblock", f.blocks, user, target, false), target, user)
}

func (f *fakeService) relatedPage(method string, set map[[2]int64]bool, user, after int64, n int) ([]feed.User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(method, user, after, n); err != nil {
		return nil, false, err
	}
	var ids []int64
	for k := range set {
		if k[0] == user {
			ids = append(ids, k[1])
		}
	}
	users, more := f.userPage(ids, after, n)
	return users, more, nil
}

func (f *fakeService) Mutes(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	return f.relatedPage("Mutes", f.mutes, user, after, n)
}

func (f *fakeService) Blocks(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	return f.relatedPage("Blocks", f.blocks, user, after, n)
}

// Hidden is not recorded: every read asks it, and the tests that list a
// request's calls are about the call that does the work.
func (f *fakeService) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var muted, blocked []int64
	for k := range f.mutes {
		if k[0] == viewer {
			muted = append(muted, k[1])
		}
	}
	for k := range f.blocks {
		switch viewer {
		case k[0]:
			blocked = append(blocked, k[1])
		case k[1]:
			blocked = append(blocked, k[0])
		}
	}
	return feed.NewHidden(muted, blocked), nil
}

func (f *fakeService) Replies(ctx context.Context, viewer, parent, after int64, n int) (feed.Page, error) {
	return feed.Page{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", parent)
}

func (f *fakeService) Thread(ctx context.Context, viewer, id int64) (feed.Thread, error) {
	return feed.Thread{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
}
