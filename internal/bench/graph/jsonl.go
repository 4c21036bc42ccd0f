package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/jsonl"
)

// JSONLWriter writes a graph as the JSON Lines files feedd import reads
// (users.jsonl, follows.jsonl, posts.jsonl, likes.jsonl in one
// directory, lines of package jsonl), so that an import can be measured on the bench's graph.
// Each post gets LikesPerPost likes from users drawn from the post's id,
// so the same graph writes the same likes. Calls may come from several
// goroutines; the users must come before the posts (Graph.Load's order).
type JSONLWriter struct {
	LikesPerPost int

	mu    sync.Mutex
	files [4]*os.File
	w     [4]*jsonl.Writer
	users []int64
}

const (
	jsonlUsers = iota
	jsonlFollows
	jsonlPosts
	jsonlLikes
)

// JSONLFiles are the files a JSONLWriter writes, in its order.
var JSONLFiles = [4]string{"users.jsonl", "follows.jsonl", "posts.jsonl", "likes.jsonl"}

// NewJSONLWriter creates dir if needed and the four files in it.
func NewJSONLWriter(dir string, likesPerPost int) (*JSONLWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench graph: %w", err)
	}
	w := &JSONLWriter{LikesPerPost: likesPerPost}
	for i, name := range JSONLFiles {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("bench graph: %w", err)
		}
		w.files[i], w.w[i] = f, jsonl.NewWriter(f, 1<<20)
	}
	return w, nil
}

var _ Loader = (*JSONLWriter)(nil)

// Finish does nothing: Close flushes the files.
func (w *JSONLWriter) Finish(context.Context) error { return nil }

// Close flushes and closes the files.
func (w *JSONLWriter) Close() error {
	var err error
	for i, f := range w.files {
		if f == nil {
			continue
		}
		err = errors.Join(err, w.w[i].Flush(), f.Close())
	}
	return err
}

// LoadUsers writes users.jsonl lines; the counts are the import's to
// compute from the follows.
func (w *JSONLWriter) LoadUsers(_ context.Context, users []feed.User) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range users {
		if err := w.w[jsonlUsers].Write(jsonl.UserLine{ID: jsonl.ID(u.ID), Name: u.Name, Handle: u.Handle}); err != nil {
			return err
		}
		w.users = append(w.users, u.ID)
	}
	return nil
}

// LoadFollows writes follows.jsonl lines.
func (w *JSONLWriter) LoadFollows(_ context.Context, edges [][2]int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range edges {
		if err := w.w[jsonlFollows].Write(jsonl.FollowLine{FollowerID: jsonl.ID(e[0]), FolloweeID: jsonl.ID(e[1])}); err != nil {
			return err
		}
	}
	return nil
}

// LoadPosts writes posts.jsonl lines, external id "p<id>", and their
// likes.
func (w *JSONLWriter) LoadPosts(_ context.Context, posts []feed.Post) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range posts {
		ext := "p" + strconv.FormatInt(p.ID, 10)
		author := jsonl.ID(p.AuthorID)
		line := jsonl.PostLine{AuthorID: author, ExternalID: ext, Content: p.Content,
			CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339Nano)}
		if err := w.w[jsonlPosts].Write(line); err != nil {
			return err
		}
		if len(w.users) == 0 {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(p.ID), 7))
		seen := map[int64]bool{}
		for range min(w.LikesPerPost, len(w.users)) {
			u := w.users[rng.IntN(len(w.users))]
			for seen[u] {
				u = w.users[rng.IntN(len(w.users))]
			}
			seen[u] = true
			if err := w.w[jsonlLikes].Write(jsonl.LikeLine{UserID: jsonl.ID(u), AuthorID: author, ExternalID: ext}); err != nil {
				return err
			}
		}
	}
	return nil
}
