package agentrt_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// A model without native tool calls writes its call as text (Hermes
// form): the call runs as a normal one, and the text around it stays the
// assistant's; with the mode off, the text is the answer.
func TestInlineToolCallsRun(t *testing.T) {
	reply := "Let me compute that.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call>"
	for _, mode := range []agentrt.InlineMode{agentrt.InlineAuto, agentrt.InlineOff} {
		t.Run(string(mode), func(t *testing.T) {
			m := scripted.New("local", scripted.Reply{Text: reply}, scripted.Reply{Text: "42"})
			e := newEnv(t, nil, agentrt.Config{}, calcAgent(agentrt.WithInlineCalls(m, mode), registry(t)))
			id := e.session(t, "calc")
			res := e.run(t, id, "6*7?")
			rs := toolResults(res.Events)
			if mode == agentrt.InlineOff {
				if len(rs) != 0 || res.Text != reply {
					t.Fatalf("off: %d results, answer %q", len(rs), res.Text)
				}
				return
			}
			if len(rs) != 1 || !rs[0].OK || !strings.Contains(string(rs[0].Result), "42") || res.Text != "42" {
				t.Fatalf("results %+v, answer %q", rs, res.Text)
			}
			for _, ev := range res.Events {
				if d, ok := ev.Data.(*session.ModelFinished); ok && len(d.ToolCalls) == 1 {
					if d.Content != "Let me compute that." || d.FinishReason != "tool_calls" {
						t.Errorf("model_finished content %q, finish %q", d.Content, d.FinishReason)
					}
				}
			}
		})
	}
}

// Native calls whose names are off by case or carry a "functions." prefix
// reach the agent's tool.
func TestToolNamesNormalised(t *testing.T) {
	for _, name := range []string{"functions.calculator", "Calculator", " calculator "} {
		m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall(name, `{"expression":"1+1"}`)}}, scripted.Reply{Text: "2"})
		e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
		id := e.session(t, "calc")
		res := e.run(t, id, "1+1")
		if rs := toolResults(res.Events); len(rs) != 1 || !rs[0].OK || rs[0].Name != "calculator" {
			t.Errorf("%q: results %+v", name, rs)
		}
	}
}
