package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{"KEY": "sk-1", "EMPTY": "", "HOST": "db"})
	tests := []struct {
		in, want string
		unset    []string
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "${KEY}", want: "sk-1"},
		{in: "Bearer ${KEY}!", want: "Bearer sk-1!"},
		{in: "${HOST}:${KEY}", want: "db:sk-1"},
		{in: "${MISSING}", want: "", unset: []string{"MISSING"}},
		{in: "a${MISSING}b${GONE}", want: "ab", unset: []string{"MISSING", "GONE"}},
		{in: "${EMPTY}", want: ""}, // set but empty is not unset
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${KEY:-fallback}", want: "sk-1"},
		{in: "${MISSING:-}", want: ""},
		{in: "${MISSING:-http://h:1/x}", want: "http://h:1/x"},
		{in: "$${KEY}", want: "${KEY}"},
		{in: "cost $$5", want: "cost $5"},
		{in: "pa$word", want: "pa$word"},
		{in: "$KEY", want: "$KEY"},
		{in: "trailing $", want: "trailing $"},
		{in: "${KEY", err: `unterminated "${KEY": close it with } or write $$ for a literal $`},
		{in: "${}", err: `bad variable reference "${}": want ${NAME} or ${NAME:-default}`},
		{in: "${1X}", err: `bad variable reference "${1X}": want ${NAME} or ${NAME:-default}`},
		{in: "${X-d}", err: `bad variable reference "${X-d}": want ${NAME} or ${NAME:-default}`},
	}
	for _, tt := range tests {
		got, unset, err := expand(tt.in, env)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("expand(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("expand(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if diff := cmp.Diff(tt.unset, unset); diff != "" {
			t.Errorf("expand(%q) unset (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseExpandsScalarsOnly(t *testing.T) {
	t.Parallel()
	src := `store: "${STORE:-memory:}"
models:
  m:
    provider: openai
    model: "${MODEL}"
    base_url: "${BASE_URL}"
    api_key: "${KEY}"
    headers: {X-Cost: "$$1", X-Raw: "${RAW}"}
agents:
  a:
    model: m
    limits: {max_rounds: "${ROUNDS:-7}", max_cost_usd: "${BUDGET}"}
    timeouts: {idle: "${IDLE:-45}"}
`
	c := parse(t, src, map[string]string{
		"MODEL":  "gpt-4o-mini",
		"RAW":    "a\nb: c", // stays one string: a value cannot add YAML structure
		"BUDGET": "2.5",
	})
	want := &Config{
		Store: "memory:",
		Models: map[string]Model{"m": {
			Provider: "openai", Model: "gpt-4o-mini",
			Headers: map[string]string{"X-Cost": "$1", "X-Raw": "a\nb: c"},
		}},
		Agents: map[string]Agent{"a": {
			Model:    "m",
			Limits:   Limits{MaxRounds: 7, MaxCostUSD: 2.5},
			Timeouts: Timeouts{Idle: Duration(45 * time.Second)},
		}},
	}
	if diff := cmp.Diff(want, c, ignoreUnexported, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for path, want := range map[string][]string{
		"models.m.api_key":  {"KEY"},
		"models.m.base_url": {"BASE_URL"},
		"models.m.model":    nil,
		"store":             nil,
	} {
		if diff := cmp.Diff(want, c.Unset(path), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Unset(%q) (-want +got):\n%s", path, diff)
		}
	}
}

func TestKeysAreNotExpanded(t *testing.T) {
	t.Parallel()
	got := parseErr(t, "models: {m: {provider: demo}}\nagents:\n  \"${AGENT}\": {model: m}\n",
		map[string]string{"AGENT": "a"})
	want := `agentrt.yaml:3:3: agents.${AGENT}: bad agent name "${AGENT}": ` +
		`agents can be tools of other agents, so use letters, digits, _ and - (at most 64)`
	if got != want {
		t.Errorf("error:\n got: %s\nwant: %s", got, want)
	}
}

func TestCheckModels(t *testing.T) {
	t.Parallel()
	src := `models:
  main: {provider: openai, model: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}
  claude: {provider: anthropic, model: claude-sonnet-4-5}
  local: {provider: openai, model: qwen3, base_url: "http://127.0.0.1:11434/v1"}
  set: {provider: openai, model: gpt-4o, api_key: "${SET_KEY}"}
  demo: {provider: demo}
`
	c := parse(t, src, map[string]string{"SET_KEY": "sk"})
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"main"}, "agentrt.yaml:2:48: models.main.api_key: api_key is empty because ${OPENAI_API_KEY} is not set"},
		{[]string{"claude"}, "agentrt.yaml:3:3: models.claude.api_key: api_key is required for provider anthropic"},
		{[]string{"local", "set", "demo"}, ""},
		{[]string{"nope"}, `agentrt.yaml: models.nope: no model named "nope"`},
		{nil, "agentrt.yaml:2:48: models.main.api_key: api_key is empty because ${OPENAI_API_KEY} is not set\n" +
			"agentrt.yaml:3:3: models.claude.api_key: api_key is required for provider anthropic"},
	}
	for _, tt := range tests {
		err := c.CheckModels(tt.names...)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("CheckModels(%q):\n got: %s\nwant: %s", tt.names, got, tt.want)
		}
	}
}

func TestCheckServer(t *testing.T) {
	t.Parallel()
	src := `server:
  addr: :8080
  api_keys:
    - {key: "${AGENTRT_KEY}", tenant: acme}
    - {key: "", tenant: beta}
    - {key: k1, tenant: gamma}
    - {key: k1, tenant: delta}
`
	c := parse(t, src, nil)
	want := "agentrt.yaml:4:8: server.api_keys[0].key: key is empty because ${AGENTRT_KEY} is not set\n" +
		"agentrt.yaml:5:8: server.api_keys[1].key: key is required\n" +
		"agentrt.yaml:7:8: server.api_keys[3].key: same key as server.api_keys[2]"
	if err := c.CheckServer(); err == nil || err.Error() != want {
		t.Errorf("CheckServer:\n got: %v\nwant: %s", err, want)
	}
	if err := parse(t, "server: {addr: 127.0.0.1:8080}\n", nil).CheckServer(); err != nil {
		t.Errorf("CheckServer without keys: %v", err)
	}
}

func TestCheckTools(t *testing.T) {
	t.Parallel()
	src := `models: {m: {provider: demo}}
agents:
  assistant:
    model: m
    tools: [calculator, "fs.*", researcher, "web.*", clok]
    approval: {ask: ["fs.write_file"], deny: ["fs.delete"]}
  researcher: {model: m, tools: [clock]}
`
	c := parse(t, src, nil)
	known := map[string]bool{"calculator": true, "clock": true, "fs.*": true, "fs.write_file": true}
	err := c.CheckTools(func(p string) bool { return known[p] }, "calculator", "clock", "fs.write_file")
	want := `agentrt.yaml:5:45: agents.assistant.tools[3]: "web.*" matches no tool` + "\n" +
		`agentrt.yaml:5:54: agents.assistant.tools[4]: "clok" matches no tool; did you mean clock?` + "\n" +
		`agentrt.yaml:6:47: agents.assistant.approval.deny[0]: "fs.delete" matches no tool`
	if err == nil || err.Error() != want {
		t.Errorf("CheckTools:\n got: %v\nwant: %s", err, want)
	}
	if err := Default().CheckTools(func(string) bool { return true }); err != nil {
		t.Errorf("Default().CheckTools: %v", err)
	}
	if err := Default().CheckTools(func(p string) bool { return p != "clock" }); err == nil ||
		err.Error() != `agents.assistant.tools[1]: "clock" matches no tool` {
		t.Errorf("Default().CheckTools without clock = %v", err)
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "8s", want: 8 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "120", want: 120 * time.Second},
		{in: "0", want: 0},
		{in: " 5 ", want: 5 * time.Second},
		{in: "-1", err: `duration "-1" is negative`},
		{in: "-2s", err: `duration "-2s" is negative`},
		{in: "1.5", err: `bad duration "1.5": want a Go duration such as "8s" or "2m", or whole seconds`},
		{in: "ten", err: `bad duration "ten": want a Go duration such as "8s" or "2m", or whole seconds`},
		{in: "99999999999999", err: `duration "99999999999999" is too long`},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalText([]byte(tt.in))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("UnmarshalText(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || d.Std() != tt.want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tt.in, d, err, tt.want)
		}
	}
	b, _ := Duration(90 * time.Second).MarshalText()
	if string(b) != "1m30s" {
		t.Errorf("MarshalText = %q, want 1m30s", b)
	}
}
