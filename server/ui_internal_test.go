package server

import (
	"context"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// Every kind of request gets its form, with its own buttons; a kind the
// page does not know is shown as its JSON with a free answer.
func TestUIRequestForms(t *testing.T) {
	ui, err := newUISigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := newUITemplates()
	if err != nil {
		t.Fatal(err)
	}
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env     string `json:"env" jsonschema:"the environment"`
		Replica int    `json:"replicas"`
		Force   bool   `json:"force,omitempty"`
	}) (string, error) {
		return "ok", nil
	}))
	tools, err := tool.NewRegistry(deploy)
	if err != nil {
		t.Fatal(err)
	}
	rn, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{{Name: "a", Model: scripted.New("m"), Tools: tools}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close(context.Background())
	s := &Server{ui: ui, uiT: tm, keys: &keyring{}, r: rn}
	at := time.Now()
	exp := at.Add(time.Hour)
	page := []session.PendingRequest{
		{SessionID: "s", Agent: "a", Asked: at, Request: session.InputRequired{RequestID: "r1", Kind: session.RequestApproval, Question: "Run deploy?",
			Calls: []model.ToolCall{{ID: "c1", Name: "deploy", Arguments: []byte(`{"env":"prod","replicas":3}`)}}, Expires: &exp}},
		{SessionID: "s", Asked: at, Request: session.InputRequired{RequestID: "r2", Kind: session.RequestPrompt, Question: "Which order?"}},
		{SessionID: "s", Asked: at, Request: session.InputRequired{RequestID: "r3", Kind: session.RequestSelect, Question: "Which size?", Options: []string{"S", "<M>"}}},
		{SessionID: "s", Asked: at, Request: session.InputRequired{RequestID: "r4", Kind: session.RequestConfirm, Question: "Did the charge go through?",
			Calls: []model.ToolCall{{ID: "c2", Name: "charge", Arguments: []byte(`{}`)}}}},
		{SessionID: "s", Asked: at, Request: session.InputRequired{RequestID: "r5", Kind: "from_the_future", Question: "Something new?"}},
	}
	r := httptest.NewRequest("GET", "/ui/inbox", nil)
	w := httptest.NewRecorder()
	s.render(w, r, 200, "inbox", uiPage{Title: "Inbox", Data: uiInboxData{Requests: s.uiRequests(r, "inbox", page)}})
	body := w.Body.String()
	for _, want := range []string{
		`value="approve">Approve`, `value="reject">Reject`, `value="edit">Approve edited`, `value="agent">always, for this agent`, `data-expires=`,
		`name="type.env" value="string"`, `name="arg.env" value="prod"`, `name="arg.replicas" value="3"`, `type="checkbox" name="arg.force"`,
		`value="answer">Answer`, `name="selected" value="&lt;M&gt;"`, `value="answer">Choose`,
		`value="done">Done`, `value="failed">Failed`, `value="retry">Retry`,
		`&#34;kind&#34;: &#34;from_the_future&#34;`, `name="decision" placeholder="e.g. answer"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the inbox lacks %q", want)
		}
	}
	if n := strings.Count(body, `name="csrf" value="`+ui.csrf(r)+`"`); n != 7 {
		t.Errorf("%d forms carry the CSRF token, want 7 (three for the approval: its answer, its fields, its JSON)", n)
	}
}

// The runtime's own events read as what they are: a sub-agent's session a
// link away, a plan's steps with their observations, what a compaction
// summarised, a loop warning, a recovery.
func TestUIEventRows(t *testing.T) {
	for _, tc := range []struct {
		data  session.Data
		title string
		child string
		text  string
	}{
		{&session.SubagentStarted{Agent: "researcher", ChildSession: "child-1", Task: "find it"}, "sub-agent researcher started", "child-1", "find it"},
		{&session.SubagentFinished{ChildSession: "child-1", Answer: "found"}, "sub-agent answered", "child-1", "found"},
		{&session.PlanStepFinished{Index: 1, Status: "done", Observation: session.Observation{OK: true, Result: []byte(`{"n":2}`)}}, "plan step 2 done", "", `"n": 2`},
		{&session.Compaction{CompactedCount: 12, Summary: "they talked", Reason: "max_messages"}, "history compacted", "", "they talked"},
		{&session.LoopWarning{Detector: "repeat", Detail: "same call 3 times", Count: 3, Threshold: 3}, "loop warning: repeat", "", ""},
		{&session.RunResumed{Reason: "recovered", From: session.StatusRunning}, "run resumed", "", ""},
	} {
		row := uiEventRow(&session.Event{V: session.SchemaVersion, Seq: 1, SessionID: "s", Type: tc.data.EventType(), Data: tc.data})
		if row.Title != tc.title || row.Child != tc.child || !strings.Contains(row.Body, tc.text) || row.Raw == "" {
			t.Errorf("%s: %+v", tc.data.EventType(), row)
		}
	}
	// A tool call shows the idempotency key its tool gets, and a model
	// change what it changed.
	row := uiEventRow(&session.Event{V: session.SchemaVersion, Seq: 4, SessionID: "s", Type: session.TypeToolCall,
		Data: &session.ToolCall{CallID: "c7", Name: "deploy", Arguments: []byte(`{}`), Attempt: 2}})
	if !slices.Contains(row.Facts, "idempotency key s/c7") || !slices.Contains(row.Facts, "attempt 2") {
		t.Errorf("a tool call's facts: %q", row.Facts)
	}
	row = uiEventRow(&session.Event{V: session.SchemaVersion, Seq: 5, SessionID: "s", Type: session.TypeModelChanged,
		Data: &session.ModelChanged{Model: "fast", Was: "smart"}})
	if row.Title != "model changed to fast" || !slices.Contains(row.Facts, "was smart") {
		t.Errorf("a model change: %+v", row)
	}
}

// A call's form fields become its arguments, typed; what is not of its
// type is said by name.
func TestUIFieldArgs(t *testing.T) {
	form := url.Values{"fields": {"1"},
		"type.env": {"string"}, "arg.env": {"staging"}, "required.env": {"1"},
		"type.replicas": {"integer"}, "arg.replicas": {"5"},
		"type.ratio": {"number"}, "arg.ratio": {"0.5"},
		"type.force": {"boolean"}, "arg.force": {"on"},
		"type.note": {"string"}, "arg.note": {""}}
	got, err := uiFieldArgs(form)
	if err != nil || string(got) != `{"env":"staging","force":true,"ratio":0.5,"replicas":5}` {
		t.Errorf("uiFieldArgs: %s %v", got, err)
	}
	for field, bad := range map[string]string{"replicas": "five", "ratio": "1,5"} {
		f := url.Values{"type." + field: {map[string]string{"replicas": "integer", "ratio": "number"}[field]}, "arg." + field: {bad}}
		if _, err := uiFieldArgs(f); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s %q: %v, want an error naming it", field, bad, err)
		}
	}
}
