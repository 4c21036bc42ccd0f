package httpapi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestPostData(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)

	// Sent spaced out, stored and served compact, byte for byte, < & >
	// included.
	r := e.do(req{method: "POST", path: "/v1/posts", token: alices,
		body: `{"content":"with data","data":{ "title" : "Hi <b>&</b>", "n" : [1, 2.50, {"x": null}] }}`})
	wantStatus(t, r, http.StatusCreated)
	const compact = `{"title":"Hi <b>&</b>","n":[1,2.50,{"x":null}]}`
	p := checkPost(t, r.json(t))
	id := p["id"].(string)
	if !bytes.Contains(r.body, []byte(`"data":`+compact+`,"created_at"`)) {
		t.Errorf("body %s; want data %s as stored", r.body, compact)
	}
	if _, ok := p["edited_at"]; ok {
		t.Errorf("a new post has edited_at: %s", r.body)
	}
	wantCalls(t, e.svc, "Publish[1 with data  "+compact+"]")

	for _, rq := range []req{
		{method: "GET", path: "/v1/posts/" + id, token: bobs},
		{method: "GET", path: "/v1/users/1/posts", token: bobs},
	} {
		r := e.do(rq)
		wantStatus(t, r, http.StatusOK)
		if !bytes.Contains(r.body, []byte(`"data":`+compact+`,`)) {
			t.Errorf("%s %s: body %s; want data %s", rq.method, rq.path, r.body, compact)
		}
	}
	e.svc.calls()

	// null is no data; so is leaving it out.
	for _, body := range []string{`{"content":"none","data":null}`, `{"content":"none"}`} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: body})
		wantStatus(t, r, http.StatusCreated)
		if _, ok := checkPost(t, r.json(t))["data"]; ok {
			t.Errorf("%s: body %s; want no data", body, r.body)
		}
		wantCalls(t, e.svc, "Publish[1 none ]")
	}

	nested := func(depth int) string {
		return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
	}
	sized := func(n int) string { return `{"s":"` + strings.Repeat("x", n-8) + `"}` }
	for _, ok := range []string{nested(32), sized(16384), `{}`} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"edge","data":` + ok + `}`})
		wantStatus(t, r, http.StatusCreated)
		e.svc.calls()
	}
	for _, bad := range []string{`[1]`, `"s"`, `1`, `true`, nested(33), sized(16385), `{"a":}`} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"bad","data":` + bad + `}`})
		wantStatus(t, r, http.StatusBadRequest)
		if got := r.errorCode(t); got != "invalid" {
			t.Errorf("data %.40s: code %q; want invalid", bad, got)
		}
		wantCalls(t, e.svc) // refused before the service
	}
}

func TestPostEdit(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)
	r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"first","data":{"v":1}}`})
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	path := "/v1/posts/" + id
	e.svc.calls()

	r = e.do(req{method: "PATCH", path: path, token: alices, body: `{"content":"second"}`})
	wantStatus(t, r, http.StatusOK)
	p := checkPost(t, r.json(t))
	if p["content"] != "second" || p["id"] != id || p["edited_at"] != "2026-11-22T08:33:43.120Z" ||
		!bytes.Contains(r.body, []byte(`"data":{"v":1}`)) {
		t.Errorf("edited post = %s; want content second, data kept, edited_at set", r.body)
	}
	wantCalls(t, e.svc, "EditPost[1 "+id+" content=second]")

	r = e.do(req{method: "PATCH", path: path, token: alices, body: `{"data": { "v" : 2 }}`})
	wantStatus(t, r, http.StatusOK)
	if p := checkPost(t, r.json(t)); p["content"] != "second" || !bytes.Contains(r.body, []byte(`"data":{"v":2}`)) {
		t.Errorf("edited post = %s; want content kept, data {\"v\":2}", r.body)
	}
	e.svc.calls()
	r = e.do(req{method: "PATCH", path: path, token: alices, body: `{"data":null}`})
	wantStatus(t, r, http.StatusOK)
	if _, ok := checkPost(t, r.json(t))["data"]; ok {
		t.Errorf("post after data null = %s; want no data", r.body)
	}
	wantCalls(t, e.svc, "EditPost[1 "+id+" data=]")

	for _, bad := range []string{``, `{}`, `{"content":null}`, `{"content":""}`, `{"content":"  "}`,
		`{"content":"` + strings.Repeat("x", 5001) + `"}`, `{"data":[1]}`, `{"data":"x"}`, `{"title":"x"}`, `[]`} {
		r := e.do(req{method: "PATCH", path: path, token: alices, body: bad})
		wantStatus(t, r, http.StatusBadRequest)
		if got := r.errorCode(t); got != "invalid" {
			t.Errorf("PATCH %.40s: code %q; want invalid", bad, got)
		}
		wantCalls(t, e.svc)
	}
	r = e.do(req{method: "PATCH", path: path, token: bobs, body: `{"content":"mine now"}`})
	wantStatus(t, r, http.StatusForbidden)
	r = e.do(req{method: "PATCH", path: "/v1/posts/99999", token: alices, body: `{"content":"x"}`})
	wantStatus(t, r, http.StatusNotFound)
	r = e.do(req{method: "PATCH", path: path, token: testAdmin, body: `{"content":"x"}`})
	wantStatus(t, r, http.StatusForbidden) // a write is a user's own
	e.svc.calls()

	wantStatus(t, e.do(req{method: "DELETE", path: path, token: alices}), http.StatusNoContent)
	r = e.do(req{method: "PATCH", path: path, token: alices, body: `{"content":"back"}`})
	wantStatus(t, r, http.StatusNotFound)
}
