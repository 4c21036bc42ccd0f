// Package client is the Go client of feedd's HTTP API: a typed method for
// every route, iterators over the paged lists, errors as *Error with the
// API's codes, retries that honour Retry-After for the calls that are safe
// to repeat, and the live stream as an iterator of events that reconnects
// and resumes by itself.
//
// A Client holds one token. Create it with the admin token to manage users
// and mint their tokens, and derive a client per user with WithToken:
//
//	admin, _ := client.New("http://127.0.0.1:8080", client.WithToken(adminToken))
//	alice, _ := admin.CreateUser(ctx, client.CreateUserParams{Name: "alice"})
//	tok, _ := admin.CreateToken(ctx, alice.ID, time.Hour)
//	asAlice := admin.WithToken(tok.Token)
//	post, _ := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "hello"})
//
// Ids are the ID type: a signed 64-bit integer, a decimal string in JSON.
package client
