package server_test

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/session/sqlite"
)

// A session that is not there is one sentence naming it, whichever store
// holds the sessions: not the store's own wording of the same appended
// (`sqlite: get session "x": session not found`).
func TestNotFoundIsOneSentence(t *testing.T) {
	st, err := sqlite.Open(t.Context(), t.TempDir()+"/s.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, options{store: st})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/nobody", ""},
		{"POST", "/v1/sessions/nobody/messages", `{"text":"hi"}`},
		{"GET", "/v1/sessions/nobody/events", ""},
	} {
		var body any
		if c.body != "" {
			body = json.RawMessage(c.body)
		}
		code, b, _ := f.do(t, c.method, c.path, "", body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(b, &e); err != nil || code != 404 || e.Error.Code != "not_found" || e.Error.Message != `session "nobody" not found` {
			t.Errorf("%s %s: %d %s; want 404 not_found with the message %q", c.method, c.path, code, b, `session "nobody" not found`)
		}
	}
}
