package agentrt

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// compactSplit keeps the last messages and never keeps a tool result
// without the call it answers.
func TestCompactSplit(t *testing.T) {
	user := model.TextMessage(model.RoleUser, "q")
	call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{}`)}}}
	res := model.Message{Role: model.RoleTool, ToolCallID: "c", Parts: []model.Part{{Type: model.PartText, Text: "r"}}}
	summary := summaryMessage("earlier")
	for _, tc := range []struct {
		name string
		msgs []model.Message
		keep int
		want int
	}{
		{"plain", []model.Message{user, call, res, call, res, call, res}, 4, 3},
		// The cut would fall on a result: its call is kept too.
		{"result at the cut", []model.Message{user, call, res, call, res, call, res}, 3, 3},
		// Parallel calls: two results after one call.
		{"two results", []model.Message{user, call, res, res, call, res}, 3, 1},
		{"nothing before the tail", []model.Message{user, call, res}, 4, 0},
		{"only a summary before the tail", []model.Message{summary, call, res, call, res}, 4, 0},
		{"a summary and more", []model.Message{summary, user, call, res, call, res}, 4, 2},
	} {
		if got := compactSplit(tc.msgs, tc.keep); got != tc.want {
			t.Errorf("%s: split %d, want %d", tc.name, got, tc.want)
		}
	}
}

// BenchmarkCompaction is the work of compacting a 500-message history
// without the summariser's model call: the threshold check, the split, the
// transcript for the summariser, the truncated fallback summary and the
// fold of the compaction event into the State.
func BenchmarkCompaction(b *testing.B) {
	var msgs []model.Message
	msgs = append(msgs, model.TextMessage(model.RoleUser, "please work through these numbers for me"))
	for i := range 166 {
		msgs = append(msgs,
			model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Type: model.PartText, Text: "Let me look that up."}},
				ToolCalls: []model.ToolCall{{ID: "c" + strconv.Itoa(i), Name: "search", Arguments: json.RawMessage(`{"query":"golang iterators and range over func","limit":10}`)}}},
			model.Message{Role: model.RoleTool, ToolCallID: "c" + strconv.Itoa(i), Name: "search",
				Parts: []model.Part{{Type: model.PartText, Text: strings.Repeat(`{"title":"Range over function types","url":"https://go.dev/blog/range-functions"},`, 4)}}},
			model.TextMessage(model.RoleAssistant, "Here is what I found so far."))
	}
	msgs = msgs[:500]
	c := Compaction{MaxMessages: 40, KeepRecent: 8}
	b.ReportAllocs()
	for b.Loop() {
		st := &State{Messages: msgs}
		if len(st.Messages) <= c.MaxMessages || historyChars(st.Messages) < 0 {
			b.Fatal("not due")
		}
		split := compactSplit(st.Messages, c.keep())
		_ = transcript(st.Messages[:split], 0, maxTranscript)
		summary := transcript(st.Messages[:split], excerpt, maxTruncated)
		if err := st.Apply(&session.Event{Data: &session.Compaction{CompactedCount: split, Summary: summary}}); err != nil {
			b.Fatal(err)
		}
	}
}
