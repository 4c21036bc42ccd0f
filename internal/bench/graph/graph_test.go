package graph

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// memLoader keeps what a Load writes.
type memLoader struct {
	mu    sync.Mutex
	users []feed.User
	edges [][2]int64
	posts []feed.Post
	// finished counts Finish calls, and rows what was loaded before it.
	finished, rows int
}

func (m *memLoader) LoadUsers(_ context.Context, u []feed.User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.users = append(m.users, u...)
	return nil
}

func (m *memLoader) LoadFollows(_ context.Context, e [][2]int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.edges = append(m.edges, e...)
	return nil
}

func (m *memLoader) LoadPosts(_ context.Context, p []feed.Post) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.posts = append(m.posts, p...)
	return nil
}

func (m *memLoader) Finish(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished++
	m.rows = len(m.users) + len(m.edges) + len(m.posts)
	return nil
}

func loadGraph(t *testing.T, opts Options) (*memLoader, *Manifest) {
	t.Helper()
	g, err := Plan(opts, time.Now())
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	var l memLoader
	m, err := g.Load(context.Background(), &l, 3, io.Discard)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// The store readies its tables once, after the last row.
	if all := len(l.users) + len(l.edges) + len(l.posts); l.finished != 1 || l.rows != all {
		t.Fatalf("Finish called %d times, after %d of %d rows; want once, after all", l.finished, l.rows, all)
	}
	return &l, m
}

func TestGraphProperties(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*Options)
	}{
		{"default shape", func(o *Options) {
			o.Users = 3000
			o.CelebrityFollowers = 1500
			o.Cohorts = []int{50, 500}
			o.CohortReaders = 20
		}},
		{"celebrity followed by everyone", func(o *Options) {
			o.Users = 500
			o.Celebrities = 3
			o.Cohorts = []int{10}
			o.CohortReaders = 5
			o.CelebrityFollowers = 500 - 2 - 5 + 5 // everyone who may, readers included
		}},
		{"readers following most authors", func(o *Options) {
			o.Users = 400
			o.CelebrityFollowers = 100
			o.Cohorts = []int{300, 5000}
			o.CohortReaders = 3
			o.Following = 200
		}},
		{"tiny: the Zipf head capped at uniform", func(o *Options) {
			o.Users = 150
			o.CelebrityFollowers = 100
			o.Following = 40
			o.Cohorts = []int{30}
			o.CohortReaders = 3
		}},
		{"no celebrities, no posts", func(o *Options) {
			o.Users = 200
			o.Celebrities = 0
			o.PostsPerUser = 0
			o.Cohorts = []int{20}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.SampleUsers = 50
			tc.opts(&opts)
			l, m := loadGraph(t, opts)

			if len(l.users) != opts.Users || m.Users != opts.Users {
				t.Fatalf("%d users loaded, manifest %d; want %d", len(l.users), m.Users, opts.Users)
			}
			if int64(len(l.edges)) != m.Follows {
				t.Fatalf("%d edges loaded; manifest says %d", len(l.edges), m.Follows)
			}
			if int64(len(l.posts)) != m.Posts || m.Posts != int64(opts.Users*opts.PostsPerUser) {
				t.Fatalf("%d posts loaded, manifest %d; want %d", len(l.posts), m.Posts, opts.Users*opts.PostsPerUser)
			}

			followers := map[int64]int64{}
			following := map[int64]int64{}
			follows := map[[2]int64]bool{}
			for _, e := range l.edges {
				if e[0] == e[1] {
					t.Fatalf("user %d follows themselves", e[0])
				}
				if follows[e] {
					t.Fatalf("edge %d -> %d twice", e[0], e[1])
				}
				follows[e] = true
				following[e[0]]++
				followers[e[1]]++
			}
			ids := map[int64]bool{}
			for _, u := range l.users {
				if ids[u.ID] {
					t.Fatalf("user id %d twice", u.ID)
				}
				ids[u.ID] = true
				if u.FollowerCount != followers[u.ID] || u.FollowingCount != following[u.ID] {
					t.Fatalf("user %d (%s) counts %d/%d; edges say %d/%d", u.ID, u.Name, u.FollowerCount, u.FollowingCount, followers[u.ID], following[u.ID])
				}
			}
			for e := range follows {
				if !ids[e[0]] || !ids[e[1]] {
					t.Fatalf("edge %d -> %d names an unknown user", e[0], e[1])
				}
			}

			id := func(s string) int64 {
				v, err := feed.ParseID(s)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if len(m.Celebrities) != opts.Celebrities {
				t.Fatalf("%d celebrities; want %d", len(m.Celebrities), opts.Celebrities)
			}
			for _, c := range m.Celebrities {
				if got := followers[id(c.ID)]; got != int64(opts.CelebrityFollowers) || c.Followers != opts.CelebrityFollowers {
					t.Fatalf("celebrity %s has %d followers (manifest %d); want %d", c.ID, got, c.Followers, opts.CelebrityFollowers)
				}
			}
			z := id(m.ZeroFollowerAuthor.ID)
			if followers[z] != 0 || m.ZeroFollowerAuthor.Followers != 0 {
				t.Fatalf("zero-follower author has %d followers", followers[z])
			}
			celebs := map[int64]bool{}
			for _, c := range m.Celebrities {
				celebs[id(c.ID)] = true
			}
			for _, co := range m.Cohorts {
				if len(co.Readers) != opts.CohortReaders {
					t.Fatalf("cohort %s has %d readers; want %d", co.Name, len(co.Readers), opts.CohortReaders)
				}
				for _, r := range co.Readers {
					if got := following[id(r)]; got != int64(co.Following) {
						t.Fatalf("reader %s of %s follows %d; want %d", r, co.Name, got, co.Following)
					}
					n := 0
					for c := range celebs {
						if follows[[2]int64{id(r), c}] {
							n++
						}
					}
					if n != co.Celebrities {
						t.Fatalf("reader %s of %s follows %d celebrities; want %d", r, co.Name, n, co.Celebrities)
					}
				}
			}
			for _, s := range m.SampleUsers {
				if !ids[id(s)] {
					t.Fatalf("sample user %s unknown", s)
				}
			}
			// Posts: ids unique and increasing in time order, created_at
			// the id's time, every user exactly PostsPerUser.
			perAuthor := map[int64]int{}
			seenPost := map[int64]bool{}
			for _, p := range l.posts {
				if seenPost[p.ID] {
					t.Fatalf("post id %d twice", p.ID)
				}
				seenPost[p.ID] = true
				if !p.CreatedAt.Equal(feed.IDTime(p.ID)) || len(p.Content) != opts.PostBytes {
					t.Fatalf("post %d: created %v, id time %v, %d bytes", p.ID, p.CreatedAt, feed.IDTime(p.ID), len(p.Content))
				}
				perAuthor[p.AuthorID]++
			}
			for u := range ids {
				if perAuthor[u] != opts.PostsPerUser {
					t.Fatalf("user %d has %d posts; want %d", u, perAuthor[u], opts.PostsPerUser)
				}
			}
		})
	}
}

// TestGraphPowerLaw checks the shape: a heavy head, a long tail, and the
// most followed ordinary author near the asked maximum.
func TestGraphPowerLaw(t *testing.T) {
	opts := DefaultOptions()
	opts.Users = 20_000
	opts.Celebrities = 0
	opts.PostsPerUser = 0
	opts.Cohorts = nil
	opts.MaxFollowers = 1000
	l, m := loadGraph(t, opts)
	in := map[int64]int{}
	for _, e := range l.edges {
		in[e[1]]++
	}
	counts := make([]int, 0, len(l.users))
	for _, u := range l.users {
		counts = append(counts, in[u.ID])
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	top, median := counts[0], counts[len(counts)/2]
	if top < 500 || top > 2000 {
		t.Errorf("most followed ordinary author has %d followers; want about 1000", top)
	}
	if m.TopOrdinaryAuthor.Followers != top {
		t.Errorf("manifest top author %d; want %d", m.TopOrdinaryAuthor.Followers, top)
	}
	if median*20 > top {
		t.Errorf("median %d vs top %d: not heavy-tailed", median, top)
	}
	t.Logf("followers: top %d, 10th %d, 100th %d, median %d, edges %d", top, counts[9], counts[99], median, len(l.edges))
}

func TestGraphRejectsImpossible(t *testing.T) {
	opts := DefaultOptions()
	opts.Users = 100
	opts.CelebrityFollowers = 100 // the celebrity cannot follow itself
	if _, err := Plan(opts, time.Now()); err == nil {
		t.Fatal("a celebrity with as many followers as users: no error")
	}
}
