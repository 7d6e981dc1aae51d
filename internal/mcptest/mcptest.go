// Package mcptest finds the reference MCP servers the test command
// installs from npm into testdata/mcp (see scripts/test.sh).
package mcptest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Server returns the entry point of the named reference server
// ("server-everything", "server-filesystem", "server-memory"). Without
// it a test is skipped, except under CI (CI set), where it fails: the
// test command installs the servers.
func Server(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	p := filepath.Join(root, "testdata", "mcp", "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mcptest: %s is not installed (scripts/test.sh installs it): %v", name, err)
		}
		t.Skipf("mcptest: %s is not installed; run scripts/test.sh, or npm install --prefix testdata/mcp @modelcontextprotocol/%s", name, name)
	}
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		if p, _ := execLookNode(); p == "" {
			t.Fatal("mcptest: node is not installed")
		}
	}
	return p
}

func execLookNode() (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(d, "node"); fileExists(p) {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
