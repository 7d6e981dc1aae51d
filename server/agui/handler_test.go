package agui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Bad input is refused before any stream, in the API's error shape with
// a code a client can act on.
func TestBadInput(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/v1/agui/nobody", `{"threadId":"t1","runId":"r1","messages":[]}`, 404, "unknown_agent"},
		{"/v1/agui/assistant", `{"runId":"r1","messages":[]}`, 400, "malformed_request"},
		{"/v1/agui/assistant", `not json`, 400, "malformed_request"},
		{"/v1/agui/assistant", `{"threadId":"bad id/x","runId":"r1","messages":[]}`, 400, "bad_session_id"},
		{"/v1/agui/assistant", `{"threadId":"t1","runId":"r1","messages":[{"id":"m","role":"user","content":[{"type":"image","source":{"type":"url","value":"http://x"}}]}]}`, 400, "url_refused"},
		{"/v1/agui/assistant", `{"threadId":"t1","runId":"r1","messages":[],"resume":[{"interruptId":"req_x","status":"resolved"}]}`, 404, "unknown_request"},
		{"/v1/agui/assistant", `{"threadId":"t1","runId":"r1","messages":[],"resume":[{"interruptId":"req_x","status":"maybe"}]}`, 400, "malformed_request"},
	} {
		resp, err := http.Post(f.http.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s %s: %d %s; want %d %s", tc.path, tc.body, resp.StatusCode, b, tc.status, tc.code)
		}
	}
}
