package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// The state is snapshotted at the end of every run, and encoding/json,
// which finds its way through the State's types by reflection on every
// call, was the largest single cost of a short turn. The functions below
// write the same bytes as json.Marshal(s), field for field and escape for
// escape, so snapshots written by either read back alike.
//
// When a field is added to State or to a type it holds (model.Message,
// model.ToolCall, session.ToolResult, ...), add it here too:
// TestSnapshotMatchesEncodingJSON fills every field of a State by
// reflection and fails until the encodings agree.

// appendSnapshot appends what json.Marshal(s) returns to b.
func (s *State) appendSnapshot(b []byte) ([]byte, error) {
	e := snapshotEncoder{b: b}
	e.state(s)
	if e.err != nil {
		return b, e.err
	}
	return e.b, nil
}

// snapshotEncoder appends JSON to b. The first error stops it: later
// appends are harmless but the result is discarded.
type snapshotEncoder struct {
	b   []byte
	err error
}

func (e *snapshotEncoder) state(s *State) {
	e.intField(`{"v":`, int64(s.V))
	e.stringField(`,"session_id":`, s.SessionID)
	e.stringField(`,"agent":`, s.Agent)
	e.intField(`,"seq":`, s.Seq)
	e.stringField(`,"status":`, string(s.Status))
	e.intField(`,"turn":`, int64(s.Turn))
	if s.RunID != "" {
		e.stringField(`,"run_id":`, s.RunID)
	}
	e.intField(`,"round":`, int64(s.Round))
	if s.RoundBase != 0 {
		e.intField(`,"round_base":`, int64(s.RoundBase))
	}
	if s.Attempt != 0 {
		e.intField(`,"attempt":`, int64(s.Attempt))
	}
	if s.InModel {
		e.b = append(e.b, `,"in_model":true`...)
	}
	e.b = append(e.b, `,"messages":`...)
	if s.Messages == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = append(e.b, '[')
		for i := range s.Messages {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.message(&s.Messages[i])
		}
		e.b = append(e.b, ']')
	}
	if len(s.Calls) > 0 {
		e.b = append(e.b, `,"calls":[`...)
		for i := range s.Calls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.callState(&s.Calls[i])
		}
		e.b = append(e.b, ']')
	}
	if len(s.Requests) > 0 {
		e.b = append(e.b, `,"requests":[`...)
		for i := range s.Requests {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.humanRequest(&s.Requests[i])
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, `,"usage":`...)
	e.usage(&s.Usage)
	e.b = append(e.b, `,"run_usage":`...)
	e.usage(&s.RunUsage)
	if s.Final != "" {
		e.stringField(`,"final":`, s.Final)
	}
	if s.LastError != nil {
		e.b = append(e.b, `,"last_error":`...)
		e.sessionError(s.LastError)
	}
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) message(m *model.Message) {
	e.stringField(`{"role":`, string(m.Role))
	if len(m.Parts) > 0 {
		e.b = append(e.b, `,"parts":[`...)
		for i, p := range m.Parts {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.stringField(`{"type":`, string(p.Type))
			if p.Text != "" {
				e.stringField(`,"text":`, p.Text)
			}
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if len(m.ToolCalls) > 0 {
		e.b = append(e.b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.toolCall(&m.ToolCalls[i])
		}
		e.b = append(e.b, ']')
	}
	if m.ToolCallID != "" {
		e.stringField(`,"tool_call_id":`, m.ToolCallID)
	}
	if m.Name != "" {
		e.stringField(`,"name":`, m.Name)
	}
	if m.IsError {
		e.b = append(e.b, `,"is_error":true`...)
	}
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) toolCall(c *model.ToolCall) {
	e.stringField(`{"id":`, c.ID)
	e.stringField(`,"name":`, c.Name)
	e.b = append(e.b, `,"arguments":`...)
	e.raw(c.Arguments)
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) callState(c *CallState) {
	e.b = append(e.b, `{"call":`...)
	e.toolCall(&c.Call)
	if c.Approval != "" {
		e.stringField(`,"approval":`, c.Approval)
	}
	if c.Reason != "" {
		e.stringField(`,"reason":`, c.Reason)
	}
	if c.Started {
		e.b = append(e.b, `,"started":true`...)
	}
	if c.Done {
		e.b = append(e.b, `,"done":true`...)
	}
	if c.Result != nil {
		e.b = append(e.b, `,"result":`...)
		e.toolResult(c.Result)
	}
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) toolResult(r *session.ToolResult) {
	e.stringField(`{"call_id":`, r.CallID)
	e.stringField(`,"name":`, r.Name)
	e.b = append(e.b, `,"ok":`...)
	e.b = strconv.AppendBool(e.b, r.OK)
	if len(r.Result) > 0 {
		e.b = append(e.b, `,"result":`...)
		e.raw(r.Result)
	}
	if r.Error != "" {
		e.stringField(`,"error":`, r.Error)
	}
	e.intField(`,"latency_ms":`, r.LatencyMS)
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) humanRequest(r *HumanRequest) {
	e.stringField(`{"id":`, r.ID)
	e.stringField(`,"kind":`, r.Kind)
	if r.CallID != "" {
		e.stringField(`,"call_id":`, r.CallID)
	}
	if len(r.Calls) > 0 {
		e.b = append(e.b, `,"calls":[`...)
		for i, id := range r.Calls {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendJSONString(e.b, id)
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) usage(u *model.Usage) {
	e.intField(`{"input_tokens":`, u.InputTokens)
	e.intField(`,"output_tokens":`, u.OutputTokens)
	if u.CachedTokens != 0 {
		e.intField(`,"cached_tokens":`, u.CachedTokens)
	}
	if u.CostUSD != 0 {
		e.b = append(e.b, `,"cost_usd":`...)
		e.float(u.CostUSD)
	}
	e.b = append(e.b, '}')
}

func (e *snapshotEncoder) sessionError(x *session.Error) {
	e.stringField(`{"code":`, x.Code)
	e.stringField(`,"message":`, x.Message)
	e.b = append(e.b, `,"recoverable":`...)
	e.b = strconv.AppendBool(e.b, x.Recoverable)
	e.b = append(e.b, '}')
}

// stringField appends key, which holds the punctuation before the value,
// and s as a JSON string.
func (e *snapshotEncoder) stringField(key, s string) {
	e.b = appendJSONString(append(e.b, key...), s)
}

func (e *snapshotEncoder) intField(key string, n int64) {
	e.b = strconv.AppendInt(append(e.b, key...), n, 10)
}

// float appends f as encoding/json does: like ES6, with 'e' notation only
// for very small or large magnitudes, and no zero-padded exponent.
func (e *snapshotEncoder) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.fail(fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64)))
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9.
		if n := len(e.b); n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

// raw appends a json.RawMessage as json.Marshal does: nil is null;
// anything else must be valid JSON and is compacted, with <, >, &, U+2028
// and U+2029 escaped.
func (e *snapshotEncoder) raw(m json.RawMessage) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	w := bytes.NewBuffer(e.b)
	var err error
	if needsHTMLEscape(m) {
		var compact bytes.Buffer
		if err = json.Compact(&compact, m); err == nil {
			json.HTMLEscape(w, compact.Bytes())
		}
	} else {
		err = json.Compact(w, m)
	}
	if err != nil {
		e.fail(fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err))
		return
	}
	e.b = w.Bytes()
}

func (e *snapshotEncoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// needsHTMLEscape reports whether JSON text b holds a character that
// json.Marshal escapes in a RawMessage: <, > or &, or the first byte of
// U+2028 or U+2029.
func needsHTMLEscape(b []byte) bool {
	for _, c := range b {
		switch c {
		case '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

// jsonSafe tells which ASCII characters a JSON string holds as they are.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it by default: control characters, quotes and backslashes; <, >
// and & (for HTML); U+2028 and U+2029 (for JSONP); and each invalid UTF-8
// byte as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
