package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/session"
)

// Each agent is a tool named as the agent, described by its description;
// a call is a turn whose answer is the result, with the session, run,
// status and usage as structured content; a call with that session
// continues the conversation.
func TestAgentsAreTools(t *testing.T) {
	f := newFixture(t)
	for _, version := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) {
			cs := f.connect(t, "key-a", version, nil)
			lr, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range lr.Tools {
				names = append(names, tl.Name)
				if tl.Name == "assistant" && !strings.HasPrefix(tl.Description, "Answers questions and deploys.") {
					t.Errorf("assistant's description %q: want the agent's", tl.Description)
				}
				if tl.OutputSchema == nil {
					t.Errorf("tool %s has no output schema", tl.Name)
				}
			}
			if !cmp.Equal(names, []string{"assistant", "other"}) {
				t.Errorf("tools %v: want the agents", names)
			}
			res, out := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "hello"}})
			if res.IsError || text(res) != "echo: hello" || out.Status != "done" || out.Answer != "echo: hello" || out.SessionID == "" || out.RunID == "" ||
				out.Usage.InputTokens != 10 || out.Usage.OutputTokens != 5 {
				t.Fatalf("call: %q %+v: want echo: hello, done, with session, run and usage", text(res), out)
			}
			res2, out2 := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "again", "session": out.SessionID}})
			if res2.IsError || out2.SessionID != out.SessionID || out2.RunID == out.RunID || out2.Answer != "echo: again" {
				t.Errorf("second call in session %s: %+v: want its next turn", out.SessionID, out2)
			}
			st, err := f.r.Load(tenantCtx(t, "ta"), out.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if st.Turn != 2 || st.Agent != "assistant" {
				t.Errorf("session after two calls: turn %d agent %s: want turn 2 of assistant", st.Turn, st.Agent)
			}
		})
	}
}

// Bad input is the tool's error result with a code saying why: an empty
// message, a session id that cannot be one, another agent's session.
func TestCallErrors(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, "key-a", "", nil)
	_, other := call(t, cs, &sdk.CallToolParams{Name: "other", Arguments: map[string]any{"message": "hi"}})
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"empty", map[string]any{"message": "  "}, "empty_input"},
		{"unusable session id", map[string]any{"message": "hi", "session": "no spaces"}, "bad_session_id"},
		{"hidden session id", map[string]any{"message": "hi", "session": "_claim.x"}, "bad_session_id"},
		{"other agent's session", map[string]any{"message": "hi", "session": other.SessionID}, "wrong_agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: tc.args})
			if !res.IsError || !strings.HasPrefix(text(res), tc.want+":") {
				t.Errorf("result %v %q: want an error result %s", res.IsError, text(res), tc.want)
			}
		})
	}
	// An argument of the wrong type is refused by the input schema.
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": 3}})
	if err == nil && !res.IsError {
		t.Errorf("message 3: %q; want refused", text(res))
	}
}

// A session is its tenant's: another key's call with its id starts a
// session of that id in the other tenant, which holds nothing of the
// first; and another key cannot use an MCP session it did not open (a
// 403 in the server's JSON error shape).
func TestTenants(t *testing.T) {
	f := newFixture(t)
	a := f.connect(t, "key-a", "2025-11-25", nil)
	_, out := call(t, a, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "secret"}})
	b := f.connect(t, "key-b", "2025-11-25", nil)
	res, outB := call(t, b, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "hi", "session": out.SessionID}})
	if res.IsError || outB.SessionID != out.SessionID || outB.Answer != "echo: hi" {
		t.Errorf("tenant b with tenant a's session id: %q %+v; want a turn of b's own session of that id", text(res), outB)
	}
	if st, err := f.r.Load(tenantCtx(t, "ta"), out.SessionID); err != nil || st.Turn != 1 {
		t.Errorf("tenant a's session after b's call: %v, %v; want its one turn", st, err)
	}
	// Tenant b's own session is in its tenant.
	_, outB = call(t, b, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "hi"}})
	if _, err := f.r.Load(tenantCtx(t, "tb"), outB.SessionID); err != nil {
		t.Errorf("tenant b's session %s in tenant tb: %v", outB.SessionID, err)
	}
	if _, err := f.r.Load(tenantCtx(t, "ta"), outB.SessionID); err == nil {
		t.Errorf("tenant b's session %s found in tenant ta", outB.SessionID)
	}
	// Key b on key a's MCP session.
	req, _ := http.NewRequest("POST", f.http.URL+mcp.Path, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer key-b")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body server.ErrorBody
	derr := json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || derr != nil || body.Error.Code != "forbidden" ||
		!strings.Contains(body.Error.Message, "another API key") || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("key b on key a's MCP session: %d %s %+v (%v); want 403 forbidden in the JSON error shape",
			resp.StatusCode, resp.Header.Get("Content-Type"), body, derr)
	}
	// No key: the server's 401.
	req, _ = http.NewRequest("POST", f.http.URL+mcp.Path, strings.NewReader(`{}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %d; want 401", resp.StatusCode)
	}
}

// A turn that fails, or is canceled, is the tool's error result whose
// text starts with the code saying why, which the structured content
// carries too.
func TestTurnFailureIsError(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, "key-a", "2025-11-25", nil)
	t.Run("failed", func(t *testing.T) {
		res, out := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "fail"}})
		if !res.IsError || !strings.HasPrefix(text(res), "auth: ") || !strings.Contains(text(res), "the provider refused the key") {
			t.Errorf("result %v %q: want an error result starting with the model's code, auth", res.IsError, text(res))
		}
		if out.Status != "failed" || out.Code != "auth" || !strings.Contains(out.Error, "the provider refused the key") {
			t.Errorf("structured content %+v: want failed, code auth, the error", out)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		id := f.newSession(t)
		done := make(chan called, 1)
		go callAsync(t.Context(), cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "block", "session": id}}, done)
		f.waitEntered(t, done)
		if code := f.rest(t, "POST", "/v1/sessions/"+id+"/cancel", `{}`, nil); code/100 != 2 {
			t.Fatalf("cancel: %d", code)
		}
		c := (<-done).check(t)
		if !c.res.IsError || !strings.HasPrefix(text(c.res), "canceled: ") {
			t.Errorf("result %v %q: want an error result starting canceled", c.res.IsError, text(c.res))
		}
		if c.out.Status != "canceled" || c.out.Code != "canceled" || c.out.SessionID != id {
			t.Errorf("structured content %+v: want canceled, code canceled, session %s", c.out, id)
		}
	})
}

// A session the client names that its tenant does not have starts a new
// session of that id for the tool's agent (docs/protocols.md), and the
// next call with it continues it; the call's answer names it.
func TestClientMadeSession(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, "key-a", "", nil)
	res, out := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "one", "session": "mine-1"}})
	if res.IsError || out.SessionID != "mine-1" || out.Answer != "echo: one" {
		t.Fatalf("first call with session mine-1: %q %+v; want a turn of a new session mine-1", text(res), out)
	}
	res, out = call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "two", "session": "mine-1"}})
	if res.IsError || out.SessionID != "mine-1" || out.Answer != "echo: two" {
		t.Fatalf("second call with session mine-1: %q %+v", text(res), out)
	}
	st, err := f.r.Load(tenantCtx(t, "ta"), "mine-1")
	if err != nil || st.Turn != 2 || st.Agent != "assistant" {
		t.Fatalf("session mine-1 in tenant ta: %+v, %v; want two turns of assistant", st, err)
	}
	// Another agent's tool with that id: the session is the assistant's.
	res, _ = call(t, cs, &sdk.CallToolParams{Name: "other", Arguments: map[string]any{"message": "x", "session": "mine-1"}})
	if !res.IsError || !strings.HasPrefix(text(res), "wrong_agent:") {
		t.Errorf("tool other with the assistant's session: %q; want wrong_agent", text(res))
	}
}

// The arguments are checked against the tool's input schema: a key the
// schema does not have (additionalProperties: false), or a value of the
// wrong type, is the tool's error result, and nothing runs.
func TestArgumentsFitSchema(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, "key-a", "", nil)
	lr, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(lr.Tools[0].InputSchema); !strings.Contains(string(b), `"additionalProperties":false`) {
		t.Fatalf("the input schema %s does not refuse other keys", b)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown key", map[string]any{"message": "hi", "sesion": "typo-1"}, "sesion"},
		{"no message", map[string]any{"session": "typo-2"}, "message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "assistant", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.HasPrefix(text(res), "malformed_request:") || !strings.Contains(text(res), tc.want) {
				t.Errorf("result %v %q: want an error result malformed_request naming %s", res.IsError, text(res), tc.want)
			}
		})
	}
	page, _, err := f.r.ListSessions(tenantCtx(t, "ta"), session.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 0 {
		t.Errorf("%d sessions after calls with bad arguments; want none", len(page))
	}
}

// The SDK's own refusals of a request (a payload that is not JSON-RPC)
// are in the server's JSON error shape, with none of the decoder's words.
func TestRefusalsAreJSON(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{`[1]`, `{"jsonrpc":5}`, `{`} {
		req, _ := http.NewRequest("POST", f.http.URL+mcp.Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer key-a")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb server.ErrorBody
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &eb) != nil || eb.Error.Code != "malformed_request" ||
			strings.Contains(eb.Error.Message, "json") {
			t.Errorf("POST %s: %d %s; want 400 malformed_request in the JSON error shape, in words of its own", body, resp.StatusCode, b)
		}
	}
}
