package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// server.a2a configures the A2A endpoints: the URL the agents' cards give
// and whether push notifications may go to private addresses.
func TestServerA2A(t *testing.T) {
	t.Parallel()
	src := "server:\n  a2a:\n    public_url: \"${PUBLIC}\"\n    allow_private_webhooks: true\n"
	cfg, err := Parse("agentrt.yaml", []byte(src), envOf(map[string]string{"PUBLIC": "https://agents.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	if diff := cmp.Diff(ServerA2A{PublicURL: "https://agents.example.com", AllowPrivateWebhooks: &yes}, cfg.Server.A2A); diff != "" {
		t.Errorf("server.a2a (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"relative url", "server:\n  a2a: {public_url: agents.example.com}\n",
			`agentrt.yaml:2:21: server.a2a.public_url: bad URL "agents.example.com": want an absolute http:// or https:// URL (the server's URL as A2A clients reach it, e.g. https://agents.example.com)`},
		{"not a boolean", "server:\n  a2a: {allow_private_webhooks: sometimes}\n",
			`agentrt.yaml:2:33: server.a2a.allow_private_webhooks: expected true or false, got "sometimes"`},
		{"unknown key", "server:\n  a2a: {public_ur: \"https://h\"}\n",
			"agentrt.yaml:2:9: server.a2a.public_ur: unknown key; did you mean public_url?"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseErr(t, tt.src, nil); got != tt.want {
				t.Errorf("error:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}
