package app

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/internal/pgtest"
)

// leftovers are the packages whose goroutines must be gone once an app is
// closed, or a Build failed: the MCP client's and the stores'.
var leftovers = []string{"modelcontextprotocol/go-sdk/", "agentrt/tool/mcptool.", "database/sql.", "agentrt/session/", "agentrt/memory/"}

// kidConfig is a config whose agent a uses the tools of a stdio MCP
// server, this test binary (see mcptest.StdioServer), which writes its
// pid to pidFile. agents is YAML appended to agent a's settings (indented
// by four) or adding agents (by two); models adds models (by two) to the
// demo model d.
func kidConfig(t *testing.T, pidFile, agents, models string) *config.Config {
	t.Helper()
	cmd, env := mcptest.StdioServer(t, pidFile)
	var envYAML []string
	for k, v := range env {
		envYAML = append(envYAML, strconv.Quote(k)+": "+strconv.Quote(v))
	}
	yaml := "mcp_servers:\n  kid: {command: " + strconv.Quote(cmd) + ", env: {" + strings.Join(envYAML, ", ") + "}}\n" +
		"models:\n  d: {provider: demo}\n" + models +
		"agents:\n  a:\n    model: d\n    tools: [calculator, \"kid.*\"]\n" + agents
	dir := t.TempDir()
	path := filepath.Join(dir, "agentrt.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	return cfg
}

// A Build that fails after the MCP servers are connected ends them: the
// server's process is gone, and no goroutine of the MCP client or of a
// store it opened is left. Each case fails at another step after the
// connection.
func TestFailedBuildEndsWhatItStarted(t *testing.T) {
	for _, tc := range []struct {
		name          string
		agent, models string
		env           map[string]string
		store         func(t *testing.T) string // the store's DSN; nil: memory:
		want          string
	}{
		{name: "recording and replaying at once", env: map[string]string{EnvRecord: "r.txt", EnvReplay: "p.txt"},
			want: "AGENTRT_RECORD and AGENTRT_REPLAY are both set"},
		{name: "bad timeout in the environment", env: map[string]string{"AGENTRT_LLM_HARD_TIMEOUT_SECONDS": "soon"},
			want: `AGENTRT_LLM_HARD_TIMEOUT_SECONDS="soon"`},
		{name: "a model that cannot be built", agent: "  b: {model: s}\n", models: "  s: {provider: scripted, script: nosuch.yaml}\n",
			want: "nosuch.yaml"},
		{name: "a tool the server does not have", agent: "  b: {model: d, tools: [kid.nosuch]}\n",
			want: `"kid.nosuch" matches no tool`},
		{name: "a timeout of a tool the agent lacks", agent: "    timeouts: {tools: {kid.nosuch: 1s}}\n",
			want: `unknown tool "kid.nosuch"`},
		{name: "a store that cannot open", store: func(*testing.T) string { return "sqllite:x.db" },
			want: `unknown scheme "sqllite"`},
		{name: "a memory that cannot open", agent: "    memory: {enabled: true}\n", store: func(t *testing.T) string {
			// A database whose memories table is someone else's.
			path := filepath.Join(t.TempDir(), "other.db")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE memories (x TEXT)`); err != nil {
				t.Fatal(err)
			}
			return "sqlite:" + path
		}, want: "memory: open"},
		{name: "agents the runner refuses", agent: "  b: {model: d, tools: [c]}\n  c: {model: d, tools: [b]}\n",
			want: "cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			cfg := kidConfig(t, pidFile, tc.agent, tc.models)
			dsn := "memory:"
			if tc.store != nil {
				dsn = tc.store(t)
			}
			a, err := Build(context.Background(), cfg, Options{StoreDSN: dsn, Getenv: func(k string) string { return tc.env[k] }})
			if err == nil {
				a.Close()
				t.Fatal("Build: no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: %v, want it to mention %s", err, tc.want)
			}
			pid := mcptest.PID(t, pidFile) // the server was started
			if mcptest.Alive(pid) {
				t.Errorf("the MCP server's process %d outlived the failed Build", pid)
			}
			mcptest.NoGoroutines(t, leftovers...)
		})
	}
}

// Close ends everything Build started, and a second Close is harmless.
func TestCloseEndsWhatBuildStarted(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := kidConfig(t, pidFile, "    memory: {enabled: true}\n", "")
	a, err := Build(context.Background(), cfg, Options{StoreDSN: "sqlite:" + filepath.Join(t.TempDir(), "a.db")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Tools.Get("kid.ping"); !ok {
		t.Fatalf("the MCP server's tool is missing: %v", a.Tools.Names())
	}
	pid := mcptest.PID(t, pidFile)
	if !mcptest.Alive(pid) {
		t.Fatal("the MCP server is not running")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if mcptest.Alive(pid) {
		t.Errorf("the MCP server's process %d outlived Close", pid)
	}
	mcptest.NoGoroutines(t, leftovers...)
	if err := a.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// An app's memory opened after Build is closed with the app; one asked
// for after Close is an error, and leaves nothing open.
func TestOpenMemoryAndClose(t *testing.T) {
	cfg, err := config.Parse("agentrt.yaml", []byte("models: {d: {provider: demo}}\nagents: {a: {model: d}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "a.db")
	a, err := Build(context.Background(), cfg, Options{StoreDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mcptest.NoGoroutines(t, leftovers...)

	b, err := Build(context.Background(), cfg, Options{StoreDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err := b.OpenMemory(context.Background()); err == nil || !strings.Contains(err.Error(), "app: closed") {
		t.Errorf("OpenMemory after Close: %v, %v; want an error", m, err)
	}
	mcptest.NoGoroutines(t, leftovers...)
}

// An app on Postgres, with a memory, that ran a turn and followed a
// session's log, leaves no pool, listener or memory goroutine once closed.
func TestCloseEndsPostgres(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	cfg, err := config.Parse("agentrt.yaml", []byte("models: {d: {provider: demo}}\nagents: {a: {model: d, tools: [calculator], memory: {enabled: true}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, Options{StoreDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Runner.CreateSession(context.Background(), "a", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Runner.Send(context.Background(), s.ID, agentrt.Input{Text: "what is 2+3"})
	if err != nil || !strings.Contains(res.Text, "5") {
		t.Fatalf("a turn: %v %v", res, err)
	}
	// Following the session's log starts the store's listener (before it
	// reads the log, whose first event ends the loop).
	ctx, cancel := context.WithCancel(context.Background())
	for _, err := range a.Runner.Watch(ctx, s.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	cancel()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mcptest.NoGoroutines(t, append(leftovers, "jackc/pgx", "jackc/puddle")...)
}
