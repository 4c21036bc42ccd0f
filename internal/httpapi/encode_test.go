package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/feedd/feedd/internal/apijson"
)

// TestEncodeAppender checks that encode writes an appender's body as a
// json.Encoder would: status, headers, the JSON and a newline.
func TestEncodeAppender(t *testing.T) {
	n, liked := int64(3), true
	page := apijson.PostsPage{Items: []apijson.Post{{ID: "1", AuthorID: "2", Content: "a <b>", CreatedAt: "t", LikeCount: &n, LikedByMe: &liked}}}
	rec := httptest.NewRecorder()
	encode(rec, http.StatusCreated, page)
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(apijson.Page[apijson.Post](page)); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != contentTypeJSON || rec.Body.String() != want.String() {
		t.Fatalf("encode = %d %q %q; want 201 %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), contentTypeJSON, want.String())
	}
}
