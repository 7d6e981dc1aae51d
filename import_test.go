package agentrt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// A session can start from a conversation held elsewhere: the next turn's
// request holds it, and a reload (replay) rebuilds it.
func TestImportSession(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: "Paris, still.", Expect: &scripted.Expect{LastUserContains: "still"}}).Record()
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	ctx := context.Background()
	history := []model.Message{
		model.TextMessage(model.RoleUser, "capital of France?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "calculator", Arguments: []byte(`{"expression":"1+1"}`)}}},
		{Role: model.RoleTool, ToolCallID: "c1", Name: "calculator", Parts: []model.Part{{Type: model.PartText, Text: "2"}}},
		model.TextMessage(model.RoleAssistant, "Paris."),
	}
	s, err := e.r.ImportSession(ctx, "calc", "imp", history, "crm export", map[string]string{"ticket": "42"})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "imp" || s.Metadata["ticket"] != "42" || s.LastSeq != 1 {
		t.Fatalf("imported session: %+v", s)
	}
	if res := e.run(t, "imp", "and still?"); res.Status != session.StatusDone || res.Text != "Paris, still." {
		t.Fatalf("next turn: %+v", res)
	}
	req := m.Requests()[0]
	var got []string
	for _, msg := range req.Messages {
		got = append(got, string(msg.Role)+":"+msg.Text())
	}
	if len(req.Messages) != 5 || got[0] != "user:capital of France?" || got[3] != "assistant:Paris." || got[4] != "user:and still?" {
		t.Fatalf("the model saw %q", got)
	}
	log := storedLog(t, e.store, "imp")
	if d, ok := log[0].Data.(*session.MessagesImported); !ok || d.Source != "crm export" || len(d.Messages) != 4 {
		t.Fatalf("first event %+v", log[0])
	}
	st, err := e.r.Load(ctx, "imp") // replayed from the log
	if err != nil || len(st.Messages) != 6 {
		t.Errorf("reloaded: %d messages (%v), want 6", len(st.Messages), err)
	}
}

func TestImportSessionBadHistory(t *testing.T) {
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t)))
	call := func(id string) model.Message {
		return model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "calculator", Arguments: []byte(`{}`)}}}
	}
	result := func(id string) model.Message {
		return model.Message{Role: model.RoleTool, ToolCallID: id, Parts: []model.Part{{Type: model.PartText, Text: "x"}}}
	}
	user := model.TextMessage(model.RoleUser, "hi")
	for _, tc := range []struct {
		name string
		msgs []model.Message
		want string
	}{
		{"empty", nil, "no message"},
		{"unknown role", []model.Message{{Role: "robot"}}, `unknown role "robot"`},
		{"late system", []model.Message{user, model.TextMessage(model.RoleSystem, "x")}, "system message comes only first"},
		{"orphan result", []model.Message{user, result("c9")}, `call "c9"`},
		{"unanswered", []model.Message{user, call("c1")}, "have no result: c1"},
		{"answered late", []model.Message{user, call("c1"), user, result("c1")}, "message 3 (user)"},
		{"bad args", []model.Message{user, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "x", Arguments: []byte(`{`)}}}}, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.r.ImportSession(context.Background(), "calc", "", tc.msgs, "", nil)
			if errCode(err) != agentrt.CodeBadHistory || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want bad_history saying %q", err, tc.want)
			}
		})
	}
	if _, err := e.r.ImportSession(context.Background(), "calc", "x", []model.Message{user}, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.ImportSession(context.Background(), "calc", "x", []model.Message{user}, "", nil); errCode(err) != agentrt.CodeSessionExists {
		t.Fatalf("import over an existing session: %v", err)
	}
	if _, err := e.r.ImportSession(context.Background(), "nobody", "", []model.Message{user}, "", nil); errCode(err) != agentrt.CodeUnknownAgent {
		t.Fatalf("import for an unknown agent: %v", err)
	}
}
