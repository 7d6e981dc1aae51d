package app

import (
	"context"
	"github.com/agentrt/agentrt/internal/pgtest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/config"
)

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, dsn := range []string{"memory:", "memory", "sqlite:" + filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"),
		// A file: URI is what sqlite.Open takes, bare or after sqlite:.
		"file:" + filepath.Join(dir, "c.db") + "?_pragma=foreign_keys(1)"} {
		st, err := OpenStore(ctx, dsn)
		if err != nil {
			t.Errorf("OpenStore(%q): %v", dsn, err)
			continue
		}
		st.Close()
	}
	for dsn, want := range map[string]string{
		"":                         "empty DSN",
		"sqllite:x.db":             `unknown scheme "sqllite"`,
		"redis://127.0.0.1:6379/0": `unknown scheme "redis"`,
		"host=127.0.0.1 port=1 user=u password=s3cret dbname=x": `"host=127.0.0.1 port=1 user=u password=xxxxx dbname=x" looks like a key=value Postgres DSN; write it as postgres://`,
		// Nothing listens on port 1; the password is never shown.
		"postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5": "cannot reach postgres://u:xxxxx@127.0.0.1:1/db",
	} {
		st, err := OpenStore(ctx, dsn)
		if err == nil {
			st.Close()
			t.Errorf("OpenStore(%q): no error", dsn)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("OpenStore(%q) = %v, want it to mention %s", dsn, err, want)
		}
	}
	// A real Postgres, when the test command started one.
	dsn, _ := pgtest.Schema(t)
	st, err := OpenStore(ctx, dsn)
	if err != nil {
		t.Fatalf("OpenStore(postgres): %v", err)
	}
	st.Close()
}

func TestBuildRejectsWhatThisBuildLacks(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"bad timeout env": {`
models: {d: {provider: demo}}
agents: {a: {model: d}}
`, `AGENTRT_LLM_HARD_TIMEOUT_SECONDS="soon": want a positive number of seconds`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse("agentrt.yaml", []byte(tc.yaml), func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"AGENTRT_LLM_HARD_TIMEOUT_SECONDS": "soon"}
			if name != "bad timeout env" {
				env = nil
			}
			a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Getenv: func(k string) string { return env[k] }})
			if err == nil {
				a.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %s", err, tc.want)
			}
		})
	}
}
