package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// closedURL is an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

func ollama(t *testing.T, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAutoModel(t *testing.T) {
	up := ollama(t, `{"models":[{"name":"qwen3:latest"},{"name":"llama3.2:latest"}]}`)
	empty := ollama(t, `{"models":[]}`)
	down := closedURL(t)
	for _, tc := range []struct {
		name       string
		env        map[string]string
		ollama     string
		wantModel  string
		wantNotice string
	}{
		{"openai key", map[string]string{"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "a"}, up, "gpt-4o-mini", "OPENAI_API_KEY is set"},
		{"openai model", map[string]string{"OPENAI_API_KEY": "sk-x", "OPENAI_MODEL": "gpt-4.1"}, up, "gpt-4.1", "OpenAI-compatible model gpt-4.1"},
		{"openai base url", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, up, "gpt-4o-mini", "OPENAI_BASE_URL is http://127.0.0.1:8000/v1"},
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "a"}, up, "claude-sonnet-4-5", "Anthropic model claude-sonnet-4-5"},
		{"ollama", nil, up, "qwen3:latest", "local Ollama"},
		{"ollama chosen model", map[string]string{"OLLAMA_MODEL": "llama3.2"}, up, "llama3.2:latest", "llama3.2:latest from the local Ollama"},
		{"ollama lacks the model", map[string]string{"OLLAMA_MODEL": "mistral"}, up, "demo", `no model "mistral"`},
		{"ollama without models", nil, empty, "demo", "ollama pull"},
		{"nothing", nil, down, "demo", "using the offline demo model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", OllamaURL: tc.ollama,
				Getenv: func(k string) string { return tc.env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			ag, _ := a.Runner.Agent(config.DefaultAgent)
			if got := ag.Model.Name(); got != tc.wantModel {
				t.Errorf("model %q, want %q", got, tc.wantModel)
			}
			notices := strings.Join(a.Notices, "\n")
			if !strings.Contains(notices, tc.wantNotice) {
				t.Errorf("notices %q, want one saying %q", notices, tc.wantNotice)
			}
		})
	}
}

func TestOllamaHost(t *testing.T) {
	for host, want := range map[string]string{
		"":                     DefaultOllamaURL,
		"127.0.0.1:9999":       "http://127.0.0.1:9999",
		"https://gpu.local/":   "https://gpu.local",
		" http://10.0.0.2:80 ": "http://10.0.0.2:80",
	} {
		if got := ollamaURL(Options{Getenv: func(string) string { return host }}); got != want {
			t.Errorf("OLLAMA_HOST=%q: %q, want %q", host, got, want)
		}
	}
}

// TestOpenAICompatibleEndToEnd runs an agent configured with a base URL
// against a local OpenAI-compatible server: tool call, tool result,
// answer, usage and cost.
func TestOpenAICompatibleEndToEnd(t *testing.T) {
	srv := fakellm.Start(t)
	yaml := `
models:
  local:
    provider: openai
    model: qwen3
    base_url: ` + srv.URL + `/v1
    price: {input: 1, output: 2}
agents:
  a: {model: local, tools: [calculator]}
`
	cfg, err := config.Parse("agentrt.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.Runner.CreateSession(context.Background(), "a", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(a.Runner.Run(context.Background(), s.ID, agentrt.Input{Text: "what is 21*2+5"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusDone || res.Text != "The answer is 47." {
		t.Fatalf("status %s, text %q", res.Status, res.Text)
	}
	want := model.Usage{InputTokens: 40, OutputTokens: 20, CostUSD: (40*1 + 20*2) / 1e6}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0]["model"] != "qwen3" || reqs[0]["stream"] != true {
		t.Errorf("requests %v", reqs)
	}
}

func TestFallbackModelsAreBuilt(t *testing.T) {
	srv := fakellm.Start(t)
	yaml := `
models:
  broken: {provider: openai, model: x, base_url: "` + closedURL(t) + `/v1"}
  local: {provider: openai, model: qwen3, base_url: "` + srv.URL + `/v1"}
agents:
  a: {model: broken, fallback_models: [local]}
`
	cfg, err := config.Parse("agentrt.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ag, _ := a.Runner.Agent("a")
	if len(ag.Fallbacks) != 1 || ag.Fallbacks[0].Name() != "qwen3" {
		t.Fatalf("fallbacks %v", ag.Fallbacks)
	}
}

// TestRecordThenReplay records a run's provider traffic with
// AGENTRT_RECORD, then replays it with AGENTRT_REPLAY after the server is
// gone: same answer, and the key is not in the file.
func TestRecordThenReplay(t *testing.T) {
	srv := fakellm.Start(t)
	file := t.TempDir() + "/traffic.txt"
	run := func(env map[string]string) (*agentrt.Result, []string) {
		t.Helper()
		a, err := Build(context.Background(), config.Default(), Options{StoreDSN: "memory:", Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		s, err := a.Runner.CreateSession(context.Background(), config.DefaultAgent, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := agentrt.Collect(a.Runner.Run(context.Background(), s.ID, agentrt.Input{Text: "what is 6*7"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		return res, a.Notices
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-secret-123", "OPENAI_BASE_URL": srv.URL + "/v1", "AGENTRT_RECORD": file}
	res, notices := run(env)
	if res.Text != "The answer is 42." || !strings.Contains(strings.Join(notices, "\n"), "recording provider traffic to "+file) {
		t.Fatalf("recording run: %q, notices %q", res.Text, notices)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "sk-secret-123") {
		t.Error("the recording holds the API key")
	}
	srv.Close()
	delete(env, "AGENTRT_RECORD")
	env["AGENTRT_REPLAY"] = file
	env["OPENAI_API_KEY"] = "another-key"
	if res, _ := run(env); res.Text != "The answer is 42." {
		t.Errorf("replayed run: %q", res.Text)
	}
	env["AGENTRT_RECORD"] = file
	if _, err := Build(context.Background(), config.Default(), Options{StoreDSN: "memory:", Getenv: func(k string) string { return env[k] }}); err == nil {
		t.Error("both AGENTRT_RECORD and AGENTRT_REPLAY accepted")
	}
}

// TestExplicitDemoNotice: a demo model chosen in the file is named as
// such, not reported as "no model found".
func TestExplicitDemoNotice(t *testing.T) {
	cfg, err := config.Parse("agentrt.yaml", []byte("models:\n  offline: {provider: demo}\nagents:\n  a: {model: offline}\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got := strings.Join(a.Notices, "\n")
	if want := "agentrt: model offline is the offline demo model: arithmetic and the date only"; got != want {
		t.Errorf("notices %q, want %q", got, want)
	}
}

// An agent's loop_detection reaches the runtime's agent.
func TestLoopDetectionFromConfig(t *testing.T) {
	src := "models:\n  m: {provider: demo}\nagents:\n  a: {model: m, loop_detection: {warning: 2, critical: 3}}\n  b: {model: m, loop_detection: {off: true}}\n"
	a := buildYAML(t, src, Options{})
	for name, want := range map[string]agentrt.LoopDetection{"a": {Warning: 2, Critical: 3}, "b": {Off: true}} {
		ag, _ := a.Runner.Agent(name)
		if ag.LoopDetection != want {
			t.Errorf("agent %s: %+v, want %+v", name, ag.LoopDetection, want)
		}
	}
}

// An agent's limits reach the runtime's agent.
func TestLimitsFromConfig(t *testing.T) {
	src := "models:\n  m: {provider: demo}\nagents:\n  a: {model: m, limits: {max_rounds: 4, max_steps: 6, max_tokens: 2000, max_cost_usd: 0.5, session_max_tokens: 90000, session_max_cost_usd: 3, max_turn_duration: 2m}}\n"
	a := buildYAML(t, src, Options{})
	ag, _ := a.Runner.Agent("a")
	want := agentrt.Limits{MaxRounds: 4, MaxSteps: 6, MaxTokens: 2000, MaxCostUSD: 0.5, SessionMaxTokens: 90000, SessionMaxCostUSD: 3, MaxTurnDuration: 2 * time.Minute}
	if ag.Limits != want {
		t.Errorf("limits %+v, want %+v", ag.Limits, want)
	}
}

// timeouts.tools bounds the named tool of an agent; a name that is not
// one of its tools is an error.
func TestToolTimeoutsFromConfig(t *testing.T) {
	block := tool.Must(tool.New("block", "waits for its context", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	m := scripted.New("s", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("block", `{}`)}}, scripted.Reply{Text: "gave up"})
	opts := Options{ExtraTools: []tool.Tool{block}, Models: map[string]model.Model{"s": m}}
	a := buildYAML(t, "models:\n  s: {provider: demo}\nagents:\n  a: {model: s, tools: [block], timeouts: {tool: 1h, tools: {block: 20ms}}}\n", opts)
	res, err := a.Runner.Ask(context.Background(), "a", "go")
	if err != nil {
		t.Fatal(err)
	}
	var results []*session.ToolResult
	for _, e := range res.Events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			results = append(results, d)
		}
	}
	if len(results) != 1 || results[0].OK || !strings.Contains(results[0].Error, "timed out") {
		t.Fatalf("results %+v, want the call timed out", results)
	}
	_, err = buildYAMLErr(t, "models:\n  s: {provider: demo}\nagents:\n  a: {model: s, tools: [block], timeouts: {tools: {blok: 1s}}}\n", opts)
	if err == nil || !strings.Contains(err.Error(), `agent "a": timeouts.tools: unknown tool "blok"`) {
		t.Fatalf("a misspelt tool: %v", err)
	}
}

// An agent's compaction, its model included, reaches the runtime's agent.
func TestCompactionFromConfig(t *testing.T) {
	src := "models:\n  m: {provider: demo}\n  small: {provider: demo}\nagents:\n  a: {model: m, compaction: {max_messages: 30, max_chars: 9000, max_tokens: 4000, keep_recent: 6, model: small}}\n"
	a := buildYAML(t, src, Options{})
	ag, _ := a.Runner.Agent("a")
	c := ag.Compaction
	if c.MaxMessages != 30 || c.MaxChars != 9000 || c.MaxTokens != 4000 || c.KeepRecent != 6 || c.Model == nil {
		t.Errorf("compaction %+v", c)
	}
}

// A model's inline_tool_calls reaches the runtime.
func TestInlineToolCallsFromConfig(t *testing.T) {
	reply := "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call>"
	for mode, wantCalls := range map[string]int{"auto": 1, "off": 0} {
		dir := t.TempDir()
		script := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(script, []byte("replies:\n  - text: "+strconv.Quote(reply)+"\n  - text: done\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		src := "models:\n  s: {provider: scripted, script: " + strconv.Quote(script) + ", inline_tool_calls: " + mode + "}\nagents:\n  a: {model: s, tools: [calculator]}\n"
		a := buildYAML(t, src, Options{})
		res, err := a.Runner.Ask(context.Background(), "a", "6*7?")
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, e := range res.Events {
			if _, ok := e.Data.(*session.ToolResult); ok {
				calls++
			}
		}
		if calls != wantCalls {
			t.Errorf("%s: %d calls, want %d", mode, calls, wantCalls)
		}
	}
}

// An agent named in another's tools is its sub-agent.
func TestSubagentFromConfig(t *testing.T) {
	src := "models:\n  m: {provider: demo}\nagents:\n  boss: {model: m, tools: [calculator, researcher]}\n  researcher: {model: m, tools: [clock]}\n"
	a := buildYAML(t, src, Options{})
	boss, _ := a.Runner.Agent("boss")
	if got := boss.Tools.Names(); fmt.Sprint(got) != "[calculator researcher]" {
		t.Fatalf("boss's tools %v", got)
	}
	def, _ := boss.Tools.Get("researcher")
	if !strings.Contains(def.Definition().Description, "Delegate a task to the agent researcher") {
		t.Errorf("researcher tool: %+v", def.Definition())
	}
	// A cycle is refused.
	src = "models:\n  m: {provider: demo}\nagents:\n  a: {model: m, tools: [b]}\n  b: {model: m, tools: [a]}\n"
	if _, err := buildYAMLErr(t, src, Options{}); err == nil ||
		!strings.Contains(err.Error(), "agents delegate to each other in a cycle: a → b → a") {
		t.Fatalf("cycle: %v", err)
	}
}

// buildYAML builds an App from src, a whole agentrt.yaml, with an
// in-memory store and an empty environment; it is closed with the test.
func buildYAML(t *testing.T, src string, opts Options) *App {
	t.Helper()
	a, err := buildYAMLErr(t, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// buildYAMLErr is buildYAML for a src that Build may refuse.
func buildYAMLErr(t *testing.T, src string, opts Options) (*App, error) {
	t.Helper()
	cfg, err := config.Parse("agentrt.yaml", []byte(src), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	opts.StoreDSN = "memory:"
	opts.Getenv = func(string) string { return "" }
	a, err := Build(context.Background(), cfg, opts)
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}

// An agent's memory is opened in the store's database and reaches the
// runtime's agent, its retrieve tool with it.
func TestMemoryFromConfig(t *testing.T) {
	a := buildYAML(t, "models:\n  m: {provider: demo}\nagents:\n  a: {model: m, memory: {remember_turns: true}}\n  b: {model: m}\n", Options{})
	ag, _ := a.Runner.Agent("a")
	if ag.Memory == nil || !ag.RememberTurns || a.Memory == nil {
		t.Fatalf("agent a: memory %v, remember %v", ag.Memory, ag.RememberTurns)
	}
	if _, ok := ag.Tools.Get("retrieve"); !ok {
		t.Error("agent a has no retrieve tool")
	}
	if bg, _ := a.Runner.Agent("b"); bg.Memory != nil {
		t.Error("agent b has a memory it did not ask for")
	}
}

// strategy: plan_execute gives the agent the plan-and-execute policy.
func TestPlanExecuteFromConfig(t *testing.T) {
	a := buildYAML(t, "models:\n  m: {provider: demo}\nagents:\n  planner: {model: m, strategy: plan_execute, tools: [calculator]}\n", Options{})
	ag, _ := a.Runner.Agent("planner")
	if _, ok := ag.Policy.(agentrt.PlanExecute); !ok {
		t.Fatalf("policy %T", ag.Policy)
	}
}

// An agent's plan settings reach its PlanExecute policy.
func TestPlanConfig(t *testing.T) {
	a := buildYAML(t, "models:\n  m: {provider: demo}\n  small: {provider: demo}\nagents:\n  p: {model: m, strategy: plan_execute, tools: [calculator], plan: {max_steps: 4, summarizer: small, replan: on_failure}}\n", Options{})
	ag, _ := a.Runner.Agent("p")
	pe, ok := ag.Policy.(agentrt.PlanExecute)
	if !ok || pe.MaxSteps != 4 || !pe.Replan || pe.Summarizer == nil {
		t.Fatalf("policy %+v", ag.Policy)
	}
}

// An agent that names an MCP server's tools gets them: the server starts
// when the app is built, and its tools run as any other.
func TestMCPToolsFromConfig(t *testing.T) {
	entry := mcptest.Server(t, "server-everything")
	m := scripted.New("s", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ev.echo", `{"message":"through the runtime"}`)}}, scripted.Reply{Text: "echoed"})
	src := "mcp_servers:\n  ev: {command: node, args: [" + strconv.Quote(entry) + ", stdio], timeout: 30s}\n  unused: {command: no-such-server}\n" +
		"models:\n  s: {provider: demo}\nagents:\n  a: {model: s, tools: [\"ev.echo\", \"ev.get-sum\"], approval: {ask: [\"ev.get-sum\"]}}\n"
	a := buildYAML(t, src, Options{Models: map[string]model.Model{"s": m}})
	ag, _ := a.Runner.Agent("a")
	if got := fmt.Sprint(ag.Tools.Names()); got != "[ev.echo ev.get-sum]" {
		t.Fatalf("tools %s", got)
	}
	res, err := a.Runner.Ask(context.Background(), "a", "echo")
	if err != nil {
		t.Fatal(err)
	}
	var results []*session.ToolResult
	for _, e := range res.Events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			results = append(results, d)
		}
	}
	if len(results) != 1 || !results[0].OK || !strings.Contains(string(results[0].Result), "through the runtime") {
		t.Fatalf("results %+v", results)
	}
	// A server that cannot start fails the build, saying which and why.
	_, err = buildYAMLErr(t, "mcp_servers:\n  gone: {command: no-such-mcp-server}\nmodels:\n  s: {provider: demo}\nagents:\n  a: {model: s, tools: [\"gone.*\"]}\n", Options{})
	if err == nil || !strings.Contains(err.Error(), `mcp server "gone": command "no-such-mcp-server"`) {
		t.Fatalf("a server that cannot start: %v", err)
	}
}
