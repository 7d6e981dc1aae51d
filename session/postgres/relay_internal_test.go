package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

func testHub() *relayHub { return &relayHub{prefix: `{"v":1,"o":"0123456789abcdef"`} }

var relayT0 = time.Date(2026, 11, 25, 3, 4, 5, 123456000, time.UTC)

func liveToken(tenant, id string, after int64, text string, at time.Duration) session.Relayed {
	return session.Relayed{Kind: session.RelayLive, Tenant: tenant, SessionID: id, After: after, Event: &session.Event{
		V: session.SchemaVersion, SessionID: id, RunID: "run-" + id, Turn: 2, Type: session.TypeToken,
		Time: relayT0.Add(at), Agent: "assistant", Data: &session.Token{Text: text},
	}}
}

// decodeAll decodes payloads, checking each is within NOTIFY's limit.
func decodeAll(t *testing.T, payloads []string) []session.Relayed {
	t.Helper()
	var out []session.Relayed
	for i, p := range payloads {
		if len(p) > maxPayload {
			t.Errorf("payload %d has %d bytes, more than %d", i, len(p), maxPayload)
		}
		if !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
			t.Errorf("payload %d is not text Postgres takes", i)
		}
		msgs, err := decodeRelay(p)
		if err != nil {
			t.Fatalf("payload %d: %v\n%s", i, err, p)
		}
		out = append(out, msgs...)
	}
	return out
}

// Every kind of message survives the trip, in order: tokens of two
// tenants' sessions with the same id, a pulse, a tool-call delta, notices.
func TestRelayEncodeRoundTrip(t *testing.T) {
	pulse := liveToken("acme", "s1", 3, "", 2*time.Millisecond)
	pulse.Event.Data = &session.Token{Pulse: true}
	delta := liveToken("acme", "s1", 3, "", 3*time.Millisecond)
	delta.Event.Type, delta.Event.Data = session.TypeToolCallDelta, &session.ToolCallDelta{Index: 0, CallID: "c1", Name: "calc", Arguments: `{"expression":`}
	msgs := []session.Relayed{
		liveToken("acme", "s1", 3, "Hello", 0),
		liveToken("acme", "s1", 3, ", \"wörld\" <&>\n", time.Millisecond),
		pulse,
		delta,
		liveToken("beta", "s1", 7, "other tenant", 0),
		{Kind: session.RelayWatching, Tenant: "acme", SessionID: "s2"},
		{Kind: session.RelayHello},
		liveToken("acme", "s1", 4, "after the next commit", 4*time.Millisecond),
	}
	payloads, err := testHub().encode(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(payloads) != 1 {
		t.Errorf("%d payloads, want 1", len(payloads))
	}
	// The notices first, then each run's events, in their order.
	want := []session.Relayed{msgs[5], msgs[6], msgs[0], msgs[1], msgs[2], msgs[3], msgs[7], msgs[4]}
	if diff := cmp.Diff(want, decodeAll(t, payloads)); diff != "" {
		t.Errorf("decoded (-sent +got):\n%s", diff)
	}
}

// Many small tokens of several sessions fill payloads to the brim: as
// few NOTIFYs as the limit allows.
func TestRelayEncodeFillsPayloads(t *testing.T) {
	var msgs []session.Relayed
	bySession := make(map[string][]session.Relayed)
	for i := range 3000 {
		id := fmt.Sprint("s", i%7) // seven runs' tokens, interleaved
		m := liveToken("default", id, int64(i/100), fmt.Sprint(" tok", i), time.Duration(i)*time.Millisecond)
		msgs = append(msgs, m)
		bySession[id] = append(bySession[id], m)
	}
	payloads, err := testHub().encode(msgs)
	if err != nil {
		t.Fatal(err)
	}
	// Each session's tokens together, in their order.
	var want []session.Relayed
	for i := range 7 {
		want = append(want, bySession[fmt.Sprint("s", i)]...)
	}
	if diff := cmp.Diff(want, decodeAll(t, payloads)); diff != "" {
		t.Errorf("decoded (-sent +got):\n%s", diff)
	}
	total := 0
	for i, p := range payloads {
		total += len(p)
		// The largest thing that may not have fitted: a new group's
		// envelope and a token.
		if i < len(payloads)-1 && len(p) < maxPayload-200 {
			t.Errorf("payload %d of %d holds %d bytes: not full", i, len(payloads), len(p))
		}
	}
	if want := total/maxPayload + 1; len(payloads) > want {
		t.Errorf("%d payloads for %d bytes, want %d", len(payloads), total, want)
	}
	t.Logf("%d tokens in %d payloads (%d bytes)", len(msgs), len(payloads), total)
}

// A token too large for one payload is cut at character boundaries, in
// full payloads; its pieces, one after the other, are its text. Text
// that JSON escapes (quotes, control characters, NUL) is measured as
// escaped.
func TestRelayEncodeCutsLargeToken(t *testing.T) {
	for _, tc := range []struct {
		name, unit string
	}{
		{"ascii", "abcdefghij"},
		{"multibyte", "héllo wörld 😀 日本語 "},
		{"escaped", "\"quoted\" <tag> \x00\x01\n\t\\"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Repeat(tc.unit, 30000/len(tc.unit))
			msgs := []session.Relayed{
				liveToken("default", "s1", 5, "before", 0),
				liveToken("default", "s1", 5, text, time.Millisecond),
				liveToken("default", "s1", 5, "after", 2*time.Millisecond),
			}
			payloads, err := testHub().encode(msgs)
			if err != nil {
				t.Fatal(err)
			}
			got := decodeAll(t, payloads)
			var pieces []string
			for _, m := range got[1 : len(got)-1] {
				if m.After != 5 || m.SessionID != "s1" {
					t.Errorf("piece %+v", m)
				}
				s := m.Event.Data.(*session.Token).Text
				if !utf8.ValidString(s) {
					t.Errorf("a piece is cut inside a character: %q…", s[:min(len(s), 20)])
				}
				pieces = append(pieces, s)
			}
			if strings.Join(pieces, "") != text {
				t.Errorf("the pieces do not make the text (%d pieces)", len(pieces))
			}
			if len(pieces) < 2 {
				t.Errorf("%d pieces", len(pieces))
			}
			for i, p := range payloads[1 : len(payloads)-1] {
				// A piece's payload is full but for less than a
				// character as escaped (at most 6 bytes: \u0000).
				if len(p) < maxPayload-6 {
					t.Errorf("piece %d's payload holds %d bytes", i, len(p))
				}
			}
			wantFirst := cmp.Diff(msgs[0], got[0]) + cmp.Diff(msgs[2], got[len(got)-1])
			if wantFirst != "" {
				t.Errorf("the tokens around it: %s", wantFirst)
			}
		})
	}
}

// What cannot be published is left out with an error that says which,
// and the rest goes.
func TestRelayEncodeRefuses(t *testing.T) {
	huge := liveToken("default", "s1", 1, "", 0)
	huge.Event.Type, huge.Event.Data = session.TypeToolCallDelta, &session.ToolCallDelta{Arguments: strings.Repeat("x", 9000)}
	ok := liveToken("default", "s1", 1, "fine", 0)
	msgs := []session.Relayed{
		{Kind: session.RelayLive, Tenant: "default", SessionID: "s1"}, // no event
		huge,
		{Kind: session.RelayListening},
		ok,
	}
	payloads, err := testHub().encode(msgs)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"message 0: a live message without an event", "message 1 (tool_call_delta of session \"s1\"): a message too large", "message 2: kind 3 cannot be published"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if diff := cmp.Diff([]session.Relayed{ok}, decodeAll(t, payloads)); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

// A payload of another version is skipped, one that is not ours fails
// to decode (and is skipped by notified).
func TestRelayDecodeOthers(t *testing.T) {
	b, _ := json.Marshal(map[string]any{"v": 2, "m": []any{map[string]any{"h": 1}}})
	if msgs, err := decodeRelay(string(b)); err != nil || len(msgs) != 0 {
		t.Errorf("version 2: %v %v", msgs, err)
	}
	if _, err := decodeRelay("not json"); err == nil {
		t.Error("garbage decoded")
	}
	if _, err := decodeRelay(`{"v":1,"m":[{"t":"d","s":"s","e":[{"p":1,"y":"tool_call_delta","j":"nope"}]}]}`); err == nil {
		t.Error("bad data decoded")
	}
}
