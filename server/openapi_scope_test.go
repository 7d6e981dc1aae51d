package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/server/openai"
)

// The OpenAPI document says what it covers: every endpoint the protocol
// adapters mount (taken from the route table, so that a new one cannot be
// forgotten) is named in its description as one it does not describe,
// and is not among its paths.
func TestOpenAPIScope(t *testing.T) {
	t.Parallel()
	rest := map[string]bool{}
	for _, rt := range newFixture(t, options{}).srv.Routes() {
		rest[rt.Method+" "+rt.Pattern] = true
	}
	f := newFixture(t, options{})
	if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := agui.Mount(f.srv); err != nil {
		t.Fatal(err)
	}
	if err := a2a.Mount(f.srv, a2a.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := mcp.Mount(f.srv, mcp.Config{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info  struct{ Summary, Description string }
		Paths map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	_, covers, ok := strings.Cut(doc.Info.Description, "**What it covers.**")
	covers, _, _ = strings.Cut(covers, "\n\n")
	if !ok || !strings.Contains(doc.Info.Summary, "The REST API of agentrt serve") {
		t.Fatalf("the document does not say what it covers: %q", doc.Info.Summary)
	}
	protocols := 0
	for _, rt := range f.srv.Routes() {
		if rest[rt.Method+" "+rt.Pattern] {
			continue
		}
		protocols++
		path := openAPIPath(rt.Pattern)
		if _, ok := doc.Paths[path]; ok {
			t.Errorf("%s %s is a protocol's, yet among the document's paths", rt.Method, path)
		}
		if !strings.Contains(covers, "`"+rt.Method+" "+path+"`") && !strings.Contains(covers, rt.Method) || !strings.Contains(covers, path+"`") {
			t.Errorf("%s %s, which a protocol adapter mounts, is not named in the document's \"What it covers\"", rt.Method, path)
		}
	}
	if protocols < 10 {
		t.Errorf("only %d protocol endpoints mounted; the test looks at the wrong routes", protocols)
	}
}
