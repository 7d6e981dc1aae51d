package cli_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// The README's set-up, as a new user types it: agentrt serve with no
// config (the demo model), a session "demo", a turn streamed as
// server-sent events with the ids and types the README shows, and a
// stream resumed from Last-Event-ID 9 that starts with events 10 and 11;
// then a chat completion of the OpenAI-compatible API, answered with the
// session in the Agentrt-Session header.
func TestServeTour(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, "", nil)
	s := startServe(t, e, nil)
	s.waitLog("using the offline demo model")
	s.waitLog("no API keys configured")
	api := newAPI(t, s.url, "")

	var created struct {
		ID     string `json:"id"`
		Agent  string `json:"agent"`
		Status string `json:"status"`
	}
	api.must(http.StatusCreated, "POST", "/v1/sessions", map[string]string{"id": "demo"}, &created)
	if created.ID != "demo" || created.Agent != "assistant" || created.Status != "idle" {
		t.Fatalf("the created session: %+v", created)
	}
	evs := api.turn("demo", "what is 21*2+5")
	var shown []string // id:type of the committed events, as the README lists them
	var tokens strings.Builder
	for _, ev := range evs {
		if ev.ID != "" {
			shown = append(shown, ev.String())
		} else if ev.Event == "token" {
			var d struct {
				Data struct{ Text string } `json:"data"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &d)
			tokens.WriteString(d.Data.Text)
		}
	}
	for _, want := range []string{"1:run_started", "6:tool_result", "10:final", "11:run_finished"} {
		if !slices.Contains(shown, want) {
			t.Errorf("the README shows %s; the stream had %v", want, shown)
		}
	}
	if len(shown) != 11 {
		t.Errorf("the stream had %d committed events, the README 11: %v", len(shown), shown)
	}
	final := evs[slices.IndexFunc(evs, func(e sseEvent) bool { return e.Event == "final" })]
	if !strings.Contains(final.Data, `"text":"21*2+5 = 47"`) || tokens.String() != "21*2+5 = 47" {
		t.Errorf("final %s, tokens %q; the README shows the answer 21*2+5 = 47", final.Data, tokens.String())
	}

	rest := startCurl(t, s.url+"/v1/sessions/demo/events", 9).until("event 11", idIs(11))
	var ids []string
	for _, ev := range rest {
		ids = append(ids, ev.String())
	}
	if !slices.Equal(ids, []string{"10:final", "11:run_finished"}) {
		t.Errorf("resumed from 9: %v, want 10:final and 11:run_finished", ids)
	}

	code, body, hdr := api.do("POST", "/v1/chat/completions", map[string]any{
		"model": "assistant", "messages": []map[string]string{{"role": "user", "content": "what is 6*7"}}})
	var cc struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Role, Content string } `json:"message"`
			FinishReason string                         `json:"finish_reason"`
		} `json:"choices"`
		Agentrt struct {
			SessionID string `json:"session_id"`
			Status    string `json:"status"`
		} `json:"agentrt"`
	}
	if err := json.Unmarshal(body, &cc); code != http.StatusOK || err != nil {
		t.Fatalf("chat completion: %d %s (%v)", code, body, err)
	}
	sid := hdr.Get("Agentrt-Session")
	if cc.Object != "chat.completion" || cc.Model != "assistant" || len(cc.Choices) != 1 ||
		cc.Choices[0].Message.Content != "6*7 = 42" || cc.Choices[0].FinishReason != "stop" ||
		sid == "" || cc.Agentrt.SessionID != sid || cc.Agentrt.Status != "done" {
		t.Errorf("chat completion %s with Agentrt-Session %q; the README shows 6*7 = 42, finish_reason stop, and the session in the header and in agentrt", body, sid)
	}
	s.stopOK()
}
