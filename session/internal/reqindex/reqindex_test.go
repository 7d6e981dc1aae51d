package reqindex

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/session"
)

// PrefixEnd bounds exactly the strings that begin with the prefix.
func TestPrefixEnd(t *testing.T) {
	for p, want := range map[string]string{
		"host:":       "host;",
		"a":           "b",
		"h\u00e9":     "h\u00ea",
		"x\U0010FFFF": "y",
		"\U0010FFFF":  "",
		"":            "",
		"x\ud7ff":     "x\ue000",
		"a\xfe":       "a\xff",
		"a\xff":       "b",
	} {
		if got := PrefixEnd(p); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", p, got, want)
		}
	}
	// Every string in [p, end) begins with p; those that begin with p are
	// in it.
	p := "h1:"
	end := PrefixEnd(p)
	for _, s := range []string{"h1:", "h1:1:a", "h1:\U0010FFFF", "h1", "h10:1:c", "h1;", "h2:"} {
		in := s >= p && s < end
		if in != strings.HasPrefix(s, p) {
			t.Errorf("%q: in [%q, %q) is %v", s, p, end, in)
		}
	}
}

// Changes leaves pending what is asked and not answered, and names what
// is answered; the two never share an id.
func TestChanges(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	exp := at.Add(time.Hour)
	ev := func(seq int64, d session.Data) *session.Event {
		return &session.Event{Seq: seq, Type: d.EventType(), Time: at, Agent: "a", Data: d}
	}
	ask := func(id string) *session.InputRequired {
		return &session.InputRequired{RequestID: id, Kind: session.RequestPrompt, Question: "<q>", Expires: &exp}
	}
	answer := func(id string) *session.InputResolved { return &session.InputResolved{RequestID: id} }
	asked, resolved, err := Changes([]*session.Event{
		ev(1, ask("r1")), ev(2, ask("r2")), ev(3, answer("r1")), ev(4, answer("old")), ev(5, answer("r3")), ev(6, ask("r3")),
		ev(7, &session.Final{Text: "x"}),
		{Seq: 8, Type: session.TypeInputRequired}, // no payload
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range asked {
		ids = append(ids, r.RequestID)
	}
	if diff := cmp.Diff([]string{"r2", "r3"}, ids); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r1", "old"}, resolved, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	r := asked[0]
	if r.Seq != 2 || r.Agent != "a" || r.Kind != "prompt" || r.Asked != at.UnixMicro() || r.Expires == nil || *r.Expires != exp.UnixMicro()+1 {
		t.Errorf("row %+v: want seq 2, agent a, asked %d, expires rounded up to %d", r, at.UnixMicro(), exp.UnixMicro()+1)
	}
	if !strings.Contains(string(r.Data), `"question":"<q>"`) {
		t.Errorf("data %s: want the question unescaped", r.Data)
	}
	p, err := Decode("t", "s", "a", r.Seq, r.Asked, r.Data)
	if err != nil || p.Request.Question != "<q>" || !p.Request.Expires.Equal(exp) || !p.Asked.Equal(at.Truncate(time.Microsecond)) {
		t.Errorf("Decode: %+v, %v", p, err)
	}
	if _, _, err := Changes([]*session.Event{{Seq: 1, Type: session.TypeInputRequired, Data: &session.Raw{T: session.TypeInputRequired, JSON: []byte(`{"request_id":`)}}}); err == nil {
		t.Error("Changes of a payload that does not decode: no error")
	}
	if _, err := Decode("t", "s", "a", 1, 0, []byte("{")); err == nil || !strings.Contains(err.Error(), `session "s"`) {
		t.Errorf("Decode of a damaged row: %v", err)
	}
}
