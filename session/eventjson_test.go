package session_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// AppendJSON writes exactly what json.Marshal writes, for every payload
// and for envelopes with strings json.Marshal escapes, zero fields it
// omits, times in other zones and out of the ordinary, and payloads it
// cannot encode (the same error).
func TestAppendJSONIsMarshal(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 34, CachedTokens: 8, CostUSD: 0.00125}
	calls := []model.ToolCall{{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{ "q" : "go <iterators>" }`)}}
	data := []session.Data{
		nil,
		&session.RunStarted{Input: "hello \u2028 <b>&</b> \"quoted\" \\ \t", Source: "cli"},
		&session.RunFinished{Status: "done", Usage: usage},
		&session.ModelFinished{Model: "gpt-x", Content: "let me look", ToolCalls: calls, Usage: usage, FinishReason: model.FinishToolCalls, LatencyMS: 812},
		&session.ToolCall{CallID: "call_1", Name: "search", Arguments: json.RawMessage("{\n  \"q\": 1\n}")},
		&session.ToolResult{CallID: "call_1", Name: "search", OK: true, Result: json.RawMessage(`{"hits":[1,2,3]}`), LatencyMS: 40},
		&session.InputRequired{RequestID: "req_2", Kind: session.RequestSelect, Question: "which?", Options: []string{"a", "b"}, Multi: true},
		&session.Final{Text: "done", Usage: usage},
		&session.Raw{T: "team_note", JSON: json.RawMessage(`{"plan":[{"tool":"search"}],"n":1.5}`)},
		(*session.Final)(nil),
	}
	base := session.Event{V: session.SchemaVersion, Seq: 7, SessionID: "s1", RunID: "cf12ba5da1faf9e2ee8a06eeccbea8d1", Turn: 3,
		Type: session.TypeFinal, Time: time.Date(2026, 3, 1, 12, 30, 15, 123456789, time.UTC), Agent: "assistant"}
	envelopes := map[string]func(e *session.Event){
		"plain":            func(*session.Event) {},
		"zero seq":         func(e *session.Event) { e.Seq = 0 },
		"no run or agent":  func(e *session.Event) { e.RunID, e.Agent = "", "" },
		"zero everything":  func(e *session.Event) { *e = session.Event{} },
		"escaped id":       func(e *session.Event) { e.SessionID = `a"b\c<d>&é` },
		"escaped agent":    func(e *session.Event) { e.Agent = "bot\n" },
		"unicode run":      func(e *session.Event) { e.RunID = "ランナー" },
		"whole seconds":    func(e *session.Event) { e.Time = time.Date(2026, 3, 1, 12, 30, 15, 0, time.UTC) },
		"zone":             func(e *session.Event) { e.Time = e.Time.In(time.FixedZone("CET", 3600)) },
		"odd zone":         func(e *session.Event) { e.Time = e.Time.In(time.FixedZone("LMT", 3600+37)) },
		"year 10000":       func(e *session.Event) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"zone of a day":    func(e *session.Event) { e.Time = e.Time.In(time.FixedZone("x", 24*3600)) },
		"zone of -a day":   func(e *session.Event) { e.Time = e.Time.In(time.FixedZone("x", -24*3600)) },
		"zone of 99:59":    func(e *session.Event) { e.Time = e.Time.In(time.FixedZone("x", 99*3600+59*60)) },
		"negative numbers": func(e *session.Event) { e.V, e.Seq, e.Turn = -1, -2, -3 },
		"local time":       func(e *session.Event) { e.Time = time.Now() },
	}
	for name, edit := range envelopes {
		for _, d := range data {
			ev := base
			edit(&ev)
			ev.Data = d
			want, werr := json.Marshal(&ev)
			got, gerr := ev.AppendJSON([]byte("prefix"))
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Errorf("%s, %T: error %v, json.Marshal's %v", name, d, gerr, werr)
				continue
			}
			if werr != nil {
				continue
			}
			if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
				t.Errorf("%s, %T:\n got %s\nwant %s", name, d, got, want)
			}
		}
	}
	// A payload json.Marshal cannot encode: the same error, nothing kept.
	ev := base
	ev.Data = &session.Final{Usage: model.Usage{CostUSD: math.Inf(1)}}
	_, werr := json.Marshal(&ev)
	got, gerr := ev.AppendJSON([]byte("prefix"))
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() || !strings.HasPrefix(string(got), "prefix") {
		t.Errorf("unencodable payload: %q, %v; json.Marshal's %v", got, gerr, werr)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	ev := &session.Event{V: 1, Seq: 5, SessionID: "r1-s123", RunID: "cf12ba5da1faf9e2ee8a06eeccbea8d1", Turn: 1, Type: session.TypeToolCall,
		Time: time.Now(), Agent: "bench", Data: &session.ToolCall{CallID: "c0", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = ev.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
