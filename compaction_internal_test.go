package agentrt

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/model"
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
