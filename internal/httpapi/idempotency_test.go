package httpapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestFingerprint: requests that decode to the same value share a
// fingerprint, whatever their JSON looked like; any difference in a value
// makes another one. A map or raw JSON in a request (a field a request
// type may gain) is hashed with its keys sorted.
func TestFingerprint(t *testing.T) {
	decoded := func(body string) createPostRequest {
		t.Helper()
		var req createPostRequest
		if err := decodeBytes([]byte(body), &req); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		return req
	}
	fp := func(req any) []byte {
		t.Helper()
		sum, err := fingerprint(req)
		if err != nil || len(sum) != 32 {
			t.Fatalf("fingerprint(%+v): got %x, %v; want 32 bytes", req, sum, err)
		}
		return sum
	}
	base := fp(decoded(`{"content":"hé <b>"}`))
	for _, same := range []string{" {\n\t\"content\" :\"hé <b>\" } ", `{"content":"h\u00e9 \u003cb>"}`} {
		if got := fp(decoded(same)); !bytes.Equal(got, base) {
			t.Errorf("%s: fingerprint differs from the compact form's", same)
		}
	}
	// No external id and external_id null are the request without one.
	if got := fp(decoded(`{"content":"hé <b>","external_id":null}`)); !bytes.Equal(got, base) {
		t.Error("external_id null: fingerprint differs from the request without one")
	}
	for _, other := range []string{`{"content":"hé <b> "}`, `{"content":"Hé <b>"}`, `{"content":"hé <b>","external_id":"a"}`} {
		if got := fp(decoded(other)); bytes.Equal(got, base) {
			t.Errorf("%s: same fingerprint as another content", other)
		}
	}

	type withData struct {
		Content string          `json:"content"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	a := fp(withData{"x", json.RawMessage(`{"b": [1, {"d":2,"c":3}], "a": "z"}`)})
	if b := fp(withData{"x", json.RawMessage(`{"a":"z","b":[1,{"c":3,"d":2}]}`)}); !bytes.Equal(a, b) {
		t.Error("raw JSON with keys in another order: fingerprints differ")
	}
	for _, other := range []string{`{"a":"z","b":[{"c":3,"d":2},1]}`, `{"a":"z","b":[1,{"c":3,"d":2.0}]}`} {
		if b := fp(withData{"x", json.RawMessage(other)}); bytes.Equal(a, b) {
			t.Errorf("data %s: same fingerprint as another value", other)
		}
	}
}

// TestErrorCodesDocumented: every code an answer can carry is in the
// OpenAPI document's enum of error codes.
func TestErrorCodesDocumented(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Error struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas.Error.Properties.Error.Properties.Code.Enum
	codes := []string{codeMethodNotAllowed}
	for code := range statusByCode {
		codes = append(codes, code)
	}
	for _, code := range codes {
		if !slices.Contains(enum, code) {
			t.Errorf("error code %q is not in openapi.json's enum %v", code, enum)
		}
	}
}
