package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// A resume after requests were answered is named after what answered
// them; any other resume keeps its reason.
func TestResumedFrom(t *testing.T) {
	t.Parallel()
	resolved := func(k session.RequestKind) *session.Event {
		return &session.Event{Type: session.TypeInputResolved, Data: &session.InputResolved{Kind: k}}
	}
	resumed := func(reason string) *session.Event {
		return &session.Event{Type: session.TypeRunResumed, Data: &session.RunResumed{Reason: reason}}
	}
	tests := []struct {
		name   string
		events []*session.Event
		want   string
	}{
		{"a confirmation", []*session.Event{resolved(session.RequestConfirm), resumed(agentrt.ResumeApproval)}, "[run] resumed (decision)\n"},
		{"an approval and an answer", []*session.Event{resolved(session.RequestApproval), resolved(session.RequestPrompt), resolved(session.RequestApproval), resumed(agentrt.ResumeApproval)},
			"[run] resumed (approval, answer)\n"},
		{"nothing answered here", []*session.Event{resumed(agentrt.ResumeApproval)}, "[run] resumed (approval)\n"},
		{"after a crash", []*session.Event{resolved(session.RequestSelect), resumed(agentrt.ResumeRecovered)}, "[run] resumed (recovered)\n"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		p := newPrinter(Streams{Out: &out, Err: &out}, false, nil)
		for _, e := range tt.events {
			if e.Type == session.TypeInputResolved {
				p.note(e)
				continue
			}
			p.emit(e)
		}
		if !strings.HasSuffix(out.String(), tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, out.String(), tt.want)
		}
	}
}
