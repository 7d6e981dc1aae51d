package a2a

import (
	"encoding/json"
	"fmt"
	"strings"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// answer is a message that answers a task's human requests: its text, or
// a data part shaped as the REST API's answer (POST
// /v1/sessions/{id}/requests/{rid}), optionally naming one request.
type answer struct {
	text       string
	structured *structuredAnswer
	requestID  string
}

// structuredAnswer is an answer as a data part.
type structuredAnswer struct {
	RequestID string          `json:"request_id,omitempty"`
	Decision  string          `json:"decision,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Text      string          `json:"text,omitempty"`
	Selected  []string        `json:"selected,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

func answerOf(m *spec.Message) (*answer, error) {
	a := &answer{}
	var texts []string
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case spec.Text:
			texts = append(texts, string(c))
		case spec.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return nil, rpcError(spec.ErrInvalidParams, "a data part of the answer is not JSON: %v", err)
			}
			var s structuredAnswer
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				return nil, rpcError(spec.ErrInvalidParams, "the answer's data part: %v (want request_id, decision, arguments, text, selected, result, reason)", err)
			}
			a.structured, a.requestID = &s, s.RequestID
		default:
			return nil, rpcError(spec.ErrUnsupportedContentType, "%s: an answer is text or data", partKind(p))
		}
	}
	a.text = strings.TrimSpace(strings.Join(texts, "\n"))
	if a.text == "" && a.structured == nil {
		return nil, rpcError(spec.ErrInvalidParams, "the answer has no text or data part")
	}
	return a, nil
}

// resolution is the answer to request r. Text answers an approval with
// approve (yes, ok) or reject (no, deny), a confirmation with done,
// failed or retry, a selection with its options separated by commas, a
// prompt with the text itself.
func (a *answer) resolution(r *session.InputRequired) (agentrt.Resolution, error) {
	if s := a.structured; s != nil {
		res := agentrt.Resolution{Decision: s.Decision, Arguments: s.Arguments, Text: s.Text, Selected: s.Selected,
			Result: s.Result, Reason: s.Reason}
		if res.Text == "" && r.Kind == session.RequestPrompt {
			res.Text = a.text
		}
		return res, nil
	}
	word := strings.ToLower(strings.Trim(a.text, " .!"))
	switch r.Kind {
	case session.RequestApproval:
		switch word {
		case "approve", "approved", "yes", "y", "ok", "allow":
			return agentrt.Resolution{Decision: "approve"}, nil
		case "reject", "rejected", "no", "n", "deny", "denied":
			return agentrt.Resolution{Decision: "reject", Reason: "rejected over A2A"}, nil
		}
		return agentrt.Resolution{}, fmt.Errorf("request %s asks for an approval: answer approve or reject (got %q)", r.RequestID, a.text)
	case session.RequestConfirm:
		switch word {
		case "done", "failed", "retry":
			return agentrt.Resolution{Decision: word}, nil
		}
		return agentrt.Resolution{}, fmt.Errorf("request %s asks whether a call completed: answer done, failed or retry (got %q)", r.RequestID, a.text)
	case session.RequestSelect:
		var sel []string
		for _, s := range strings.Split(a.text, ",") {
			if s = strings.TrimSpace(s); s != "" {
				sel = append(sel, s)
			}
		}
		return agentrt.Resolution{Decision: "answer", Selected: sel}, nil
	default:
		return agentrt.Resolution{Decision: "answer", Text: a.text}, nil
	}
}
