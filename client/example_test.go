package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/feedd/feedd/client"
)

// The examples run against a real feedd that TestMain starts on the
// embedded default: exampleURL is its address, exampleAdmin its admin
// token.

// newUser creates a user with the admin client and returns a client that
// acts as them.
func newUser(ctx context.Context, admin *client.Client, name string) (client.User, *client.Client) {
	u, err := admin.CreateUser(ctx, client.CreateUserParams{Name: name})
	if err != nil {
		log.Fatal(err)
	}
	tok, err := admin.CreateToken(ctx, u.ID, time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	return u, admin.WithToken(tok.Token)
}

func Example() {
	ctx := context.Background()
	admin, err := client.New(exampleURL, client.WithToken(exampleAdmin))
	if err != nil {
		log.Fatal(err)
	}
	alice, err := admin.CreateUser(ctx, client.CreateUserParams{Name: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	tok, err := admin.CreateToken(ctx, alice.ID, time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	asAlice := admin.WithToken(tok.Token)
	_, asBob := newUser(ctx, admin, "bob")

	if err := asBob.Follow(ctx, alice.ID); err != nil {
		log.Fatal(err)
	}
	if _, err := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "hello, world"}); err != nil {
		log.Fatal(err)
	}
	for post, err := range asBob.Feed(ctx, client.PageParams{Limit: 20}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(post.Content, *post.LikeCount)
	}
	// Output: hello, world 0
}

func ExampleClient_CreatePost() {
	ctx := context.Background()
	admin, _ := client.New(exampleURL, client.WithToken(exampleAdmin))
	_, asCarol := newUser(ctx, admin, "carol")

	// The key makes the create safe to send again: the same key and body
	// answer the same post, however often the request is repeated.
	key := client.NewIdempotencyKey()
	params := client.CreatePostParams{
		Content:        "a post with data",
		Data:           json.RawMessage(`{"title": "Hi", "image": "https://example.com/a.png"}`),
		IdempotencyKey: key,
	}
	first, err := asCarol.CreatePost(ctx, params)
	if err != nil {
		log.Fatal(err)
	}
	again, err := asCarol.CreatePost(ctx, params)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.ID == again.ID)
	fmt.Println(string(first.Data))
	// Output:
	// true
	// {"title":"Hi","image":"https://example.com/a.png"}
}

func ExampleClient_EditPost() {
	ctx := context.Background()
	admin, _ := client.New(exampleURL, client.WithToken(exampleAdmin))
	_, asDan := newUser(ctx, admin, "dan")
	post, err := asDan.CreatePost(ctx, client.CreatePostParams{Content: "frist", Data: json.RawMessage(`{"draft":true}`)})
	if err != nil {
		log.Fatal(err)
	}
	content := "first"
	edited, err := asDan.EditPost(ctx, post.ID, client.EditPostParams{Content: &content, Data: client.NoData()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(edited.Content, edited.Data == nil, edited.EditedAt != nil)
	// Output: first true true
}

func ExampleError() {
	ctx := context.Background()
	admin, _ := client.New(exampleURL, client.WithToken(exampleAdmin))
	_, err := admin.GetPost(ctx, 12345)
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code)
	}
	// Output: 404 not_found
}

func ExampleClient_Stream() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, _ := client.New(exampleURL, client.WithToken(exampleAdmin))
	erin, asErin := newUser(ctx, admin, "erin")
	_, asFrank := newUser(ctx, admin, "frank")
	if err := asFrank.Follow(ctx, erin.ID); err != nil {
		log.Fatal(err)
	}
	if _, err := asErin.CreatePost(ctx, client.CreatePostParams{Content: "already there"}); err != nil {
		log.Fatal(err)
	}

	// An app shows the first page, then streams from its newest post: a
	// post made in between is not missed.
	page, err := asFrank.FeedPage(ctx, client.PageParams{Limit: 20})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := asErin.CreatePost(ctx, client.CreatePostParams{Content: "live!"}); err != nil {
		log.Fatal(err)
	}
	for ev, err := range asFrank.Stream(ctx, client.StreamOptions{LastEventID: page.Items[0].ID}) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Type {
		case client.EventPost:
			fmt.Println("new post:", ev.Post.Content)
		case client.EventReset:
			fmt.Println("too many missed: reload the first page")
		}
		break // a real app goes on reading until ctx ends
	}
	// Output: new post: live!
}
