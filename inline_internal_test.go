package agentrt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Replies of model families that write their tool calls as text, from the
// formats' public documentation (each fixture's name says where from).
func TestInlineCalls(t *testing.T) {
	tools := map[string]bool{"get_current_temperature": true, "get_temperature_date": true,
		"get_stock_fundamentals": true, "get_current_conditions": true}
	known := func(n string) (string, bool) { return n, tools[n] }
	for _, tc := range []struct {
		file  string
		mode  InlineMode
		calls []string // name + arguments
		rest  string
	}{
		{"qwen2.5-hermes-from-qwen-function-calling-docs.txt", InlineAuto, []string{
			`get_current_temperature {"location": "San Francisco, CA, USA"}`,
			`get_temperature_date {"location": "San Francisco, CA, USA", "date": "2024-10-01"}`}, ""},
		{"hermes2pro-from-nous-hermes-function-calling-readme.txt", InlineAuto, []string{
			`get_stock_fundamentals {"symbol": "TSLA"}`}, "I will look up the fundamentals first."},
		{"llama3.1-python-tag-from-meta-prompt-format-docs.txt", InlineAuto, []string{
			`get_current_conditions {"location": "San Francisco, CA", "unit": "Fahrenheit"}`}, ""},
		// Arguments as a JSON string, as OpenAI's API writes them.
		{"json-fence-from-ollama-raw-mode-style.txt", InlineAuto, []string{
			`get_current_temperature {"location": "Paris, France"}`},
			"Let me check the weather for you.\n\n\n\nI'll report back once I have it."},
		// A bare object is a call only when the mode is on.
		{"llama3.1-bare-json-from-meta-prompt-format-docs.txt", InlineOn, []string{`get_current_conditions {"location": "Oslo"}`}, ""},
		{"llama3.1-bare-json-from-meta-prompt-format-docs.txt", InlineAuto, nil, "SAME"},
		// Half JSON, an unknown tool, the mode off: the text stays whole.
		{"half-json.txt", InlineAuto, nil, "SAME"},
		{"unknown-tool.txt", InlineAuto, nil, "SAME"},
		{"qwen2.5-hermes-from-qwen-function-calling-docs.txt", InlineOff, nil, "SAME"},
	} {
		t.Run(tc.file+"/"+string(tc.mode), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "inline", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			calls, rest := inlineCalls(text, tc.mode, known)
			var got []string
			for _, c := range calls {
				got = append(got, c.Name+" "+string(c.Arguments))
			}
			if diff := cmp.Diff(tc.calls, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			want := tc.rest
			if want == "SAME" {
				want = text
			}
			if rest != want {
				t.Errorf("text left %q, want %q", rest, want)
			}
		})
	}
}

func TestParseInlineMode(t *testing.T) {
	for in, want := range map[string]InlineMode{"": InlineAuto, "auto": InlineAuto, "on": InlineOn, "off": InlineOff} {
		if got, err := ParseInlineMode(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseInlineMode("yes"); err == nil || err.Error() != `inline_tool_calls "yes": want auto, on or off` {
		t.Errorf("bad mode: %v", err)
	}
}

// BenchmarkInlineCallsProse is the cost for a reply of prose, the usual
// one when a model has no native calls: a scan for the markers.
func BenchmarkInlineCallsProse(b *testing.B) {
	text := strings.Repeat("The answer depends on the numbers you gave me, and on the tool results. ", 20)
	known := func(n string) (string, bool) { return n, true }
	b.ReportAllocs()
	for b.Loop() {
		if calls, _ := inlineCalls(text, InlineAuto, known); calls != nil {
			b.Fatal("calls in prose")
		}
	}
}
