package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/server"
)

// A keys file holds hashes only: AppendKeysFile writes it private, and
// ServerKeys gives the server the config's keys and the file's.
func TestKeysFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if keys, err := app.ReadKeysFile(path); err != nil || keys != nil {
		t.Fatalf("a missing file: %v, %v; want no keys", keys, err)
	}
	k := app.FileKey{Hash: server.HashKey("secret"), Tenant: "acme", Principal: "ana", Rate: 5}
	if err := app.AppendKeysFile(path, k); err != nil {
		t.Fatal(err)
	}
	if err := app.AppendKeysFile(path, app.FileKey{Hash: server.HashKey("other"), Tenant: "globex"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the keys file's mode: %v %v", fi.Mode(), err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "secret") {
		t.Fatalf("the file holds the key itself:\n%s", b)
	}
	cfg := &config.Config{Server: config.Server{APIKeysFile: path, APIKeys: []config.APIKey{{Key: "inline", Tenant: "t"}}}}
	got, err := app.ServerKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []server.Key{
		{Key: "inline", Tenant: "t"},
		{Hash: server.HashKey("secret"), Tenant: "acme", Principal: "ana", Rate: 5},
		{Hash: server.HashKey("other"), Tenant: "globex"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ServerKeys (-want +got):\n%s", diff)
	}
}

func TestBadKeysFile(t *testing.T) {
	for _, c := range []struct{ name, body, says string }{
		{"a key itself", "- {key: secret, tenant: a}\n", "a key itself does not belong"},
		{"no tenant", "- {hash: \"sha256:00\"}\n", "needs a hash and a tenant"},
		{"no hash", "- {tenant: a}\n", "needs a hash and a tenant"},
		{"not a list", "hash: x\n", "want a list"},
		{"not YAML", "- {hash: [\n", "want a list"},
	} {
		path := filepath.Join(t.TempDir(), "keys.yaml")
		if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := app.ReadKeysFile(path)
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file and saying %q", c.name, err, c.says)
		}
	}
}
