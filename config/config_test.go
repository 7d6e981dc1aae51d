package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"
)

// envOf returns an env lookup over m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var ignoreUnexported = cmpopts.IgnoreUnexported(Config{})

func parse(t *testing.T, src string, env map[string]string) *Config {
	t.Helper()
	c, err := Parse("agentrt.yaml", []byte(src), envOf(env))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// parseErr parses src, which must be invalid, and returns the error text.
func parseErr(t *testing.T, src string, env map[string]string) string {
	t.Helper()
	_, err := Parse("agentrt.yaml", []byte(src), envOf(env))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse error = %v (%T), want *Error", err, err)
	}
	return err.Error()
}

var fullEnv = map[string]string{
	"OPENAI_API_KEY":    "sk-test",
	"ANTHROPIC_API_KEY": "ak-test",
	"TOKEN":             "tok",
	"AGENTRT_KEY":       "key-1",
	// OPENAI_BASE_URL is left unset: base_url then expands to "".
}

func wantFull() *Config {
	return &Config{
		Store: "sqlite:.agentrt/agentrt.db",
		Models: map[string]Model{
			"main": {Provider: "openai", Model: "gpt-4o-mini", APIKey: "sk-test"},
			"claude": {
				Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: "ak-test",
				Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"},
				Price:   &Price{InputPerMTok: 3, OutputPerMTok: 15, CachedPerMTok: 0.3},
			},
			"local": {Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen3"},
			"test":  {Provider: "scripted", Script: "testdata/weather.yaml"},
		},
		MCPServers: map[string]MCPServer{
			"fs": {
				Command: "npx",
				Args:    []string{"-y", "@modelcontextprotocol/server-filesystem", "./data"},
				Env:     map[string]string{"NODE_ENV": "production"},
			},
			"remote": {URL: "http://127.0.0.1:9000/mcp", Headers: map[string]string{"Authorization": "Bearer tok"}},
		},
		Agents: map[string]Agent{
			"assistant": {
				Model:          "main",
				FallbackModels: []string{"claude", "local"},
				Profile: Profile{Name: "Assistant", Role: "helper", Goal: "answer well", Backstory: "none",
					Language: "en", Tone: "concise"},
				Instructions: "Be brief.",
				Strategy:     "react",
				Tools:        []string{"calculator", "clock", "fs.*", "researcher"},
				Approval:     Approval{Default: "auto", Ask: []string{"fs.write_file", "fs.move_file"}, Deny: []string{}},
				Limits:       Limits{MaxRounds: 10, MaxSteps: 6, MaxTokens: 200000, MaxCostUSD: 1.0},
				Timeouts: Timeouts{
					FirstFeedback: Duration(8 * time.Second), FirstChunk: Duration(120 * time.Second),
					Idle: Duration(60 * time.Second), Hard: Duration(5 * time.Minute), Tool: Duration(60 * time.Second),
				},
				Compaction:    Compaction{MaxMessages: 20, MaxChars: 48000, KeepRecent: 8},
				LoopDetection: LoopDetection{Warning: 4, Critical: 8},
			},
			"researcher": {
				Model: "local", Strategy: "plan_execute", Tools: []string{"clock"},
				Limits: Limits{MaxRounds: DefaultMaxRounds},
			},
		},
		Server: Server{Addr: "127.0.0.1:8080", APIKeys: []APIKey{{Key: "key-1", Tenant: "acme"}}},
	}
}

func TestParseFullFile(t *testing.T) {
	t.Parallel()
	data, err := readTestdata("agentrt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("testdata/agentrt.yaml", data, envOf(fullEnv))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff(wantFull(), c, ignoreUnexported); diff != "" {
		t.Errorf("config mismatch (-want +got):\n%s", diff)
	}
	if got := c.File(); got != "testdata/agentrt.yaml" {
		t.Errorf("File() = %q", got)
	}
	if diff := cmp.Diff([]string{"OPENAI_BASE_URL"}, c.Unset("models.main.base_url")); diff != "" {
		t.Errorf("Unset(models.main.base_url) (-want +got):\n%s", diff)
	}
	if got := c.Unset("models.main.api_key"); len(got) != 0 {
		t.Errorf("Unset(models.main.api_key) = %v, want none", got)
	}
	for _, f := range []func() error{
		func() error { return c.CheckModels() },
		c.CheckServer,
		func() error { return c.CheckTools(func(p string) bool { return p != "researcher" }) },
	} {
		if err := f(); err != nil {
			t.Errorf("check: %v", err)
		}
	}
}

func TestLoad(t *testing.T) {
	// Not parallel: t.Setenv.
	for k, v := range fullEnv {
		t.Setenv(k, v)
	}
	t.Setenv("OPENAI_BASE_URL", "https://proxy.example/v1")
	c, err := Load(filepath.Join("testdata", "agentrt.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := wantFull()
	m := want.Models["main"]
	m.BaseURL = "https://proxy.example/v1"
	want.Models["main"] = m
	if diff := cmp.Diff(want, c, ignoreUnexported); diff != "" {
		t.Errorf("config mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentrt.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) = %v, want an error wrapping fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestPositions(t *testing.T) {
	t.Parallel()
	data, err := readTestdata("agentrt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("agentrt.yaml", data, envOf(fullEnv))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want Position
	}{
		{"store", Position{"agentrt.yaml", 2, 1}},
		{"models.claude", Position{"agentrt.yaml", 5, 3}},
		{"models.claude.price.cached", Position{"agentrt.yaml", 10, 35}},
		{"agents.assistant.tools[2]", Position{"agentrt.yaml", 23, 32}},
		{"agents.assistant.limits.max_rounds", Position{"agentrt.yaml", 25, 14}},
		{"server.api_keys[0].tenant", Position{"agentrt.yaml", 35, 38}},
	}
	for _, tt := range tests {
		got, ok := c.Pos(tt.path)
		if !ok || got != tt.want {
			t.Errorf("Pos(%q) = %v, %v; want %v", tt.path, got, ok, tt.want)
		}
	}
	if _, ok := c.Pos("agents.researcher.limits.max_rounds"); ok {
		t.Errorf("Pos of a default value reported as written")
	}
	// Problemf falls back to the closest written parent.
	p := c.Problemf("agents.researcher.limits.max_rounds", "too %s", "many")
	if got, want := p.String(), "agentrt.yaml:29:3: agents.researcher.limits.max_rounds: too many"; got != want {
		t.Errorf("Problemf = %q, want %q", got, want)
	}
	if got, want := Default().Problemf("agents.assistant", "x").String(), "agents.assistant: x"; got != want {
		t.Errorf("Default().Problemf = %q, want %q", got, want)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	demoAgent := Agent{Model: "auto", Tools: []string{"calculator", "clock"}, Limits: Limits{MaxRounds: 10}}
	tests := []struct {
		name string
		src  string
		want *Config
	}{
		{"empty file", "", Default()},
		{"only comments", "# nothing yet\n", Default()},
		{"null document", "~\n", Default()},
		{"store only; memory is memory:", "store: memory\n", &Config{
			Store:  "memory:",
			Models: map[string]Model{"auto": {Provider: "auto"}},
			Agents: map[string]Agent{"assistant": demoAgent},
		}},
		{"one model, no agents: the assistant uses it", "models: {main: {provider: openai, model: m}}\n", &Config{
			Store:  DefaultStore,
			Models: map[string]Model{"main": {Provider: "openai", Model: "m"}},
			Agents: map[string]Agent{"assistant": {Model: "main", Tools: []string{"calculator", "clock"}, Limits: Limits{MaxRounds: 10}}},
		}},
		{"two models, no agents: the assistant uses demo", "models: {a: {provider: demo}, b: {provider: demo}}\n", &Config{
			Store:  DefaultStore,
			Models: map[string]Model{"a": {Provider: "demo"}, "b": {Provider: "demo"}, "auto": {Provider: "auto"}},
			Agents: map[string]Agent{"assistant": demoAgent},
		}},
		{"agent without max_rounds, zero max_rounds", `
models: {m: {provider: demo}}
agents:
  a: {model: m}
  b: {model: m, limits: {max_rounds: 0, max_steps: 3}}
  c: {model: m, limits: {max_rounds: 25}}
`, &Config{
			Store:  DefaultStore,
			Models: map[string]Model{"m": {Provider: "demo"}},
			Agents: map[string]Agent{
				"a": {Model: "m", Limits: Limits{MaxRounds: 10}},
				"b": {Model: "m", Limits: Limits{MaxRounds: 10, MaxSteps: 3}},
				"c": {Model: "m", Limits: Limits{MaxRounds: 25}},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parse(t, tt.src, nil)
			if diff := cmp.Diff(tt.want, got, ignoreUnexported, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	c := Default()
	want := &Config{
		Store:      "sqlite:.agentrt/agentrt.db",
		Models:     map[string]Model{"auto": {Provider: "auto"}},
		MCPServers: map[string]MCPServer{},
		Agents: map[string]Agent{"assistant": {
			Model: "auto", Tools: []string{"calculator", "clock"}, Limits: Limits{MaxRounds: 10},
		}},
	}
	if diff := cmp.Diff(want, c, ignoreUnexported); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Each call returns its own config.
	c.Agents["assistant"] = Agent{}
	if Default().Agents["assistant"].Model != "auto" {
		t.Error("Default shares state between calls")
	}
	if err := c.CheckModels(); err != nil {
		t.Errorf("CheckModels: %v", err)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	c := parse(t, `
models: {z: {provider: demo}, a: {provider: demo}}
mcp_servers: {web: {url: "https://x.example/mcp"}, db: {command: db-mcp}}
agents: {writer: {model: z}, critic: {model: a}, boss: {model: a}}
`, nil)
	if diff := cmp.Diff([]string{"boss", "critic", "writer"}, c.AgentNames()); diff != "" {
		t.Errorf("AgentNames (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "z"}, c.ModelNames()); diff != "" {
		t.Errorf("ModelNames (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db", "web"}, c.MCPServerNames()); diff != "" {
		t.Errorf("MCPServerNames (-want +got):\n%s", diff)
	}
	a := Agent{Model: "m", FallbackModels: []string{"f1", "f2"}}
	if diff := cmp.Diff([]string{"m", "f1", "f2"}, a.Models()); diff != "" {
		t.Errorf("Agent.Models (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"openai", "anthropic", "scripted", "demo", "auto"}, Providers()); diff != "" {
		t.Errorf("Providers (-want +got):\n%s", diff)
	}
}

func TestMergeKeys(t *testing.T) {
	t.Parallel()
	c := parse(t, `
x-agent: &agent
  model: m
  tools: [clock]
  limits: {max_rounds: 3}
models: {m: {provider: demo}}
agents:
  a: *agent
  b:
    <<: *agent
    tools: [calculator]
`, nil)
	want := map[string]Agent{
		"a": {Model: "m", Tools: []string{"clock"}, Limits: Limits{MaxRounds: 3}},
		"b": {Model: "m", Tools: []string{"calculator"}, Limits: Limits{MaxRounds: 3}},
	}
	if diff := cmp.Diff(want, c.Agents); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestMarshalRoundTrip checks that the yaml tags spell the same keys the
// decoder reads.
func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	data, err := readTestdata("agentrt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("agentrt.yaml", data, envOf(fullEnv))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("out.yaml", out, envOf(nil))
	if err != nil {
		t.Fatalf("Parse(Marshal(c)): %v\n%s", err, out)
	}
	if diff := cmp.Diff(c, again, ignoreUnexported, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func readTestdata(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}
