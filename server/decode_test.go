package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A body of JSON null is a 400 on every route that takes a JSON body: it
// would decode to nothing and pass for an empty request (POST
// /v1/sessions made a session of the default agent). So are a list and a
// scalar. The MCP endpoint's JSON-RPC body is the SDK's to read, and
// refused the same way; A2A's is a2a-go's, which answers JSON-RPC errors.
func TestBodyNotAnObject(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	mountAdapters(t, f)
	fill := strings.NewReplacer("{id}", id, "{agent}", "assistant", "{rid}", "req_nope")
	for _, rt := range f.srv.Routes() {
		if rt.Method != "POST" || strings.HasPrefix(rt.Pattern, "/v1/a2a") || rt.Pattern == "/v1/responses/{id}/cancel" {
			continue
		}
		for _, body := range []string{`null`, ` null `, `[]`, `"x"`, `1`} {
			code, b, _ := f.do(t, "POST", fill.Replace(rt.Pattern), "", body, "Accept", "application/json, text/event-stream", "Content-Type", "application/json")
			var eb struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if code != http.StatusBadRequest || json.Unmarshal(b, &eb) != nil || eb.Error.Code != "malformed_request" {
				t.Errorf("POST %s %s: %d %s; want 400 malformed_request", rt.Pattern, body, code, b)
			}
		}
	}
}
