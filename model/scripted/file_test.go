package scripted_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

// calcConversation drives a calculator script through its two calls and
// returns the two replies.
func calcConversation(t *testing.T, m *scripted.Model) []*model.Response {
	t.Helper()
	req := &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 21*2+5?")},
		Tools:    []model.ToolSpec{{Name: "calculator"}},
	}
	first := generate(t, m, req)
	call := first.Message.ToolCalls[0]
	req.Messages = append(req.Messages, first.Message, model.Message{
		Role: model.RoleTool, ToolCallID: call.ID, Name: call.Name,
		Parts: []model.Part{{Type: model.PartText, Text: `{"expression":"21*2+5","result":47}`}},
	})
	return []*model.Response{first, generate(t, m, req)}
}

func TestLoadYAMLAndJSON(t *testing.T) {
	t.Parallel()
	var got [][]*model.Response
	for _, file := range []string{"testdata/calc.yaml", "testdata/calc.json"} {
		m, err := scripted.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if m.Name() != "calc" {
			t.Errorf("%s: Name() = %q, want calc (after the file)", file, m.Name())
		}
		got = append(got, calcConversation(t, m))
	}
	want := []*model.Response{
		{
			Message: model.Message{
				Role:  model.RoleAssistant,
				Parts: []model.Part{{Type: model.PartText, Text: "Let me compute that."}},
				ToolCalls: []model.ToolCall{
					{ID: "call_1_1", Name: "calculator", Arguments: []byte(`{"expression":"21*2+5"}`)},
				},
			},
			FinishReason: model.FinishToolCalls,
			Usage:        model.Usage{InputTokens: 7, OutputTokens: 14},
		},
		{
			Message:      model.TextMessage(model.RoleAssistant, "21*2+5 = 47"),
			FinishReason: model.FinishStop,
			Usage:        model.Usage{InputTokens: 29, OutputTokens: 3},
		},
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("calc.yaml (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("calc.json differs from calc.yaml (-yaml +json):\n%s", diff)
	}
}

func TestParseName(t *testing.T) {
	t.Parallel()
	data := []byte("name: from-file\nreplies: []\n")
	for _, tt := range []struct{ arg, want string }{{"given", "given"}, {"", "from-file"}} {
		m, err := scripted.Parse(tt.arg, data)
		if err != nil {
			t.Fatal(err)
		}
		if m.Name() != tt.want {
			t.Errorf("Parse(%q): Name() = %q, want %q", tt.arg, m.Name(), tt.want)
		}
	}
	m, err := scripted.Parse("", []byte("replies: []"))
	if err != nil || m.Name() != "scripted" {
		t.Errorf("Parse without names: %v, %v", m, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := scripted.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("err = %v, want a not-exist error", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []string // the lines of the error
	}{
		{
			name: "empty",
			data: "",
			want: []string{`bad: empty script, want a mapping with a replies key`},
		},
		{
			name: "not a mapping",
			data: "- text: hi\n",
			want: []string{`bad:1:1: script: want a mapping with keys name, play, replies, got a list`},
		},
		{
			name: "no replies",
			data: "name: x\n",
			want: []string{`bad:1:1: script: no replies key`},
		},
		{
			name: "replies not a list",
			data: "replies:\n  text: hi\n",
			want: []string{`bad:2:3: replies: want a list, got a mapping`},
		},
		{
			name: "unknown keys",
			data: "replies: []\nmodel: x\n",
			want: []string{`bad:2:1: script: unknown key "model", want one of name, play, replies`},
		},
		{
			name: "misspelt reply key",
			data: "replies:\n  - text: hi\n  - txt: hello\n",
			want: []string{`bad:3:5: replies[1]: unknown key "txt", ` +
				`want one of text, tool_calls, chunks, delay, usage, finish_reason, error, error_code, retry_after, expect`},
		},
		{
			name: "bad scalars",
			data: `replies:
  - text: [a]
    chunks: three
    delay: 2
    finish_reason: done
    error: ""
  - chunks: -1
    delay: -1s
    usage: {input_tokens: 1.5, cost_usd: cheap, total: 3}
`,
			want: []string{
				`bad:2:11: replies[0].text: want a string, got a list`,
				`bad:3:13: replies[0].chunks: want a non-negative integer, got "three"`,
				`bad:4:12: replies[0].delay: want a duration such as "2s" or "150ms", got "2"`,
				`bad:5:20: replies[0].finish_reason: unknown finish reason "done", want one of [stop tool_calls length content_filter error]`,
				`bad:6:12: replies[0].error: empty; remove the key for a reply that succeeds`,
				`bad:7:13: replies[1].chunks: want a non-negative integer, got "-1"`,
				`bad:8:12: replies[1].delay: want a duration such as "2s" or "150ms", got "-1s"`,
				`bad:9:27: replies[1].usage.input_tokens: want a non-negative integer, got "1.5"`,
				`bad:9:42: replies[1].usage.cost_usd: want a non-negative number, got "cheap"`,
				`bad:9:49: replies[1].usage: unknown key "total", want one of input_tokens, output_tokens, cached_tokens, cost_usd`,
			},
		},
		{
			name: "tool calls",
			data: `replies:
  - tool_calls:
      - arguments: {a: 1}
      - name: calculator
        arguments: '{"expression": '
      - name: calculator
        arguments: [1, 2]
      - name: calculator
        arguments: "2+2"
      - name: ""
        verbatim: yes please
      - calculator
`,
			want: []string{
				`bad:3:9: replies[0].tool_calls[0]: no name key: a tool call needs the tool's name`,
				`bad:4:9: replies[0].tool_calls[1].arguments: not valid JSON: {"expression": (set verbatim: true to send it anyway)`,
				`bad:6:9: replies[0].tool_calls[2].arguments: [1,2] is not a JSON object (set verbatim: true to send it anyway)`,
				`bad:8:9: replies[0].tool_calls[3].arguments: not valid JSON: 2+2 (set verbatim: true to send it anyway)`,
				`bad:10:15: replies[0].tool_calls[4].name: empty`,
				`bad:11:19: replies[0].tool_calls[4].verbatim: want true or false, got "yes please"`,
				`bad:12:9: replies[0].tool_calls[5]: want a mapping with keys id, name, arguments, verbatim, got "calculator"`,
			},
		},
		{
			name: "expect",
			data: `replies:
  - expect:
      last_user_contains: "2+2"
      tools_include: calculator
      last_message_contains: x
`,
			want: []string{
				`bad:4:22: replies[0].expect.tools_include: want a list, got "calculator"`,
				`bad:5:7: replies[0].expect: unknown key "last_message_contains", want one of last_user_contains, last_tool_result_contains, tools_include`,
			},
		},
		{
			name: "YAML syntax",
			data: "replies:\n\t- text: hi\n",
			want: []string{`bad: yaml: line 2: found character that cannot start any token`},
		},
		{
			name: "JSON syntax",
			data: "{\n  \"replies\": [\n    {\"text\": \"hi\" \"chunks\": 2}\n  ]\n}\n",
			want: []string{`bad:3:19: invalid character '"' after object key:value pair`},
		},
		{
			name: "repeated key",
			data: "{\"replies\": [{\"text\": \"a\",\n \"text\": \"b\"}]}",
			want: []string{`bad:2:2: replies[0]: key "text" repeated (first on line 1)`},
		},
		{
			name: "JSON field",
			data: "{\n  \"replies\": [\n    {\"text\": \"hi\", \"chunks\": \"3\"}\n  ]\n}\n",
			want: []string{`bad:3:30: replies[0].chunks: want a non-negative integer, got "3"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := scripted.Parse("bad", []byte(tt.data))
			if err == nil {
				t.Fatalf("Parse succeeded: %v", m)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadStrictJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := []byte("{\n  \"replies\": [\n    {\"text\": \"hi\",}\n  ]\n}\n")
	// Flow YAML takes the trailing comma; a .json file must be JSON.
	if _, err := scripted.Parse("x", data); err != nil {
		t.Errorf("Parse: %v", err)
	}
	path := filepath.Join(dir, "script.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := scripted.Load(path)
	want := path + `:3:19: invalid character '}' looking for beginning of object key string`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestLoadErrorNamesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte("replies:\n  - text: hi\n    chunk: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := scripted.Load(path)
	want := path + `:3:5: replies[0]: unknown key "chunk", want one of text, tool_calls, chunks, delay, usage, finish_reason, error, error_code, retry_after, expect`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}
