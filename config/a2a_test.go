package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// An a2a_agents entry decodes with all its keys, and an agent may list its
// name among its tools.
func TestA2AAgents(t *testing.T) {
	t.Parallel()
	src := `models: {m: {provider: demo}}
a2a_agents:
  research:
    url: https://agents.example.com/v1/a2a/researcher
    description: Looks things up on the web.
    headers: {Authorization: "Bearer ${KEY}"}
    timeout: 2m
agents:
  a: {model: m, tools: [research]}
`
	cfg, err := Parse("agentrt.yaml", []byte(src), envOf(map[string]string{"KEY": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]A2AAgent{"research": {URL: "https://agents.example.com/v1/a2a/researcher",
		Description: "Looks things up on the web.", Headers: map[string]string{"Authorization": "Bearer s3cret"},
		Timeout: Duration(2 * time.Minute)}}
	if diff := cmp.Diff(want, cfg.A2AAgents); diff != "" {
		t.Errorf("a2a_agents (-want +got):\n%s", diff)
	}
	if err := cfg.CheckTools(func(string) bool { return false }); err != nil {
		t.Errorf("an agent listing a remote A2A agent: %v", err)
	}
	if err := cfg.CheckA2AAgents(func(n string) bool { return n == "calculator" }); err != nil {
		t.Errorf("no clash: %v", err)
	}
	if err := cfg.CheckA2AAgents(func(n string) bool { return n == "research" }); err == nil ||
		err.Error() != `agentrt.yaml:3:3: a2a_agents.research: "research" is also the name of a tool; rename the remote agent` {
		t.Errorf("a clash with a tool: %v", err)
	}
}

func TestA2AAgentProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, src, want string }{
		{"no url", "a2a_agents:\n  r: {description: x}\n",
			"agentrt.yaml:2:3: a2a_agents.r: url is required: the remote agent's A2A base URL"},
		{"url from an unset variable", "a2a_agents:\n  r: {url: \"${R_URL}\"}\n",
			"agentrt.yaml:2:3: a2a_agents.r: url is empty because ${R_URL} is not set: the remote agent's A2A base URL"},
		{"relative url", "a2a_agents:\n  r: {url: agents.example.com/a2a}\n",
			`agentrt.yaml:2:12: a2a_agents.r.url: bad URL "agents.example.com/a2a": want an absolute http:// or https:// URL`},
		{"url not http", "a2a_agents:\n  r: {url: \"ftp://h/a2a\"}\n",
			`agentrt.yaml:2:12: a2a_agents.r.url: bad URL "ftp://h/a2a": want an absolute http:// or https:// URL`},
		{"unknown key", "a2a_agents:\n  r: {url: \"http://h/a2a\", descripton: x}\n",
			"agentrt.yaml:2:28: a2a_agents.r.descripton: unknown key; did you mean description?"},
		{"bad name", "a2a_agents:\n  r.x: {url: \"http://h/a2a\"}\n",
			`agentrt.yaml:2:3: a2a_agents.r.x: bad name "r.x": a remote agent is a tool of the agents that list it, so use letters, digits, _ and - (at most 64)`},
		{"name of an agent", "models: {m: {provider: demo}}\nagents: {helper: {model: m}}\na2a_agents:\n  helper: {url: \"http://h/a2a\"}\n",
			`agentrt.yaml:4:3: a2a_agents.helper: "helper" is also the name of an agent; rename one (both would be the tool helper)`},
		{"name of an MCP server", "mcp_servers: {fs: {command: x}}\na2a_agents:\n  fs: {url: \"http://h/a2a\"}\n",
			`agentrt.yaml:3:3: a2a_agents.fs: "fs" is also the name of an MCP server; rename one`},
		{"bad timeout", "a2a_agents:\n  r: {url: \"http://h/a2a\", timeout: soon}\n",
			`agentrt.yaml:2:37: a2a_agents.r.timeout: bad duration "soon": want a Go duration such as "8s" or "2m", or whole seconds`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseErr(t, tt.src, nil); got != tt.want {
				t.Errorf("error:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}
