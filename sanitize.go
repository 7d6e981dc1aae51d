package agentrt

import (
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/model"
)

// AppendSanitized appends msgs to dst so that providers accept the
// history: every assistant message's tool calls are followed by
// one tool message per call; tool calls without a result are dropped (and
// an assistant message left with neither text nor calls is dropped), and
// tool messages that answer no preceding call are dropped. A consistent
// history is appended unchanged, without copying messages.
func AppendSanitized(dst, msgs []model.Message) []model.Message {
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == model.RoleTool:
			// Reached only when no assistant message claims it.
			continue
		case m.Role != model.RoleAssistant || len(m.ToolCalls) == 0:
			dst = append(dst, m)
			continue
		}
		// The tool messages that follow m.
		j := i + 1
		for j < len(msgs) && msgs[j].Role == model.RoleTool {
			j++
		}
		results := msgs[i+1 : j]
		if answersAll(m.ToolCalls, results) && len(results) == len(m.ToolCalls) {
			dst = append(dst, msgs[i:j]...)
			i = j - 1
			continue
		}
		kept := make([]model.ToolCall, 0, len(m.ToolCalls))
		for _, c := range m.ToolCalls {
			if hasResult(results, c.ID) {
				kept = append(kept, c)
			}
		}
		m.ToolCalls = kept
		if len(kept) == 0 {
			m.ToolCalls = nil
			if len(m.Parts) == 0 {
				i = j - 1
				continue
			}
		}
		dst = append(dst, m)
		for _, c := range kept {
			for _, r := range results {
				if r.ToolCallID == c.ID {
					dst = append(dst, r)
					break
				}
			}
		}
		i = j - 1
	}
	return dst
}

// Consistent reports whether msgs needs no sanitising: AppendSanitized
// would append it unchanged.
func Consistent(msgs []model.Message) bool {
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == model.RoleTool:
			return false // a tool message no assistant message claims
		case m.Role != model.RoleAssistant || len(m.ToolCalls) == 0:
			continue
		}
		j := i + 1
		for j < len(msgs) && msgs[j].Role == model.RoleTool {
			j++
		}
		if !answersAll(m.ToolCalls, msgs[i+1:j]) {
			return false
		}
		i = j - 1
	}
	return true
}

func answersAll(calls []model.ToolCall, results []model.Message) bool {
	if len(results) != len(calls) {
		return false
	}
	for k, c := range calls {
		if results[k].ToolCallID != c.ID {
			return false
		}
	}
	return true
}

func hasResult(results []model.Message, id string) bool {
	for _, r := range results {
		if r.ToolCallID == id {
			return true
		}
	}
	return false
}

// checkArgs reports whether b is a JSON object.
func checkArgs(b []byte) error {
	if !json.Valid(b) {
		return fmt.Errorf("not valid JSON: %s", preview(string(b)))
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return nil
		}
		break
	}
	return fmt.Errorf("must be a JSON object, got %s", preview(string(b)))
}
