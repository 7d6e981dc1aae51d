package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// docSection returns the part of a document of docs/ that starts with
// start and ends before end.
func docSection(t *testing.T, doc, start, end string) string {
	t.Helper()
	text := repoFile(t, "docs/"+doc)
	_, rest, ok := strings.Cut(text, start)
	if !ok {
		t.Fatalf("docs/%s has no %q", doc, start)
	}
	section, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("docs/%s has no %q after %q", doc, end, start)
	}
	return section
}

// docs/protocols.md's worked client tool of the Responses API, as it is
// written: its agentrt.yaml and script in a directory, agentrt serve on
// them, its script run by node with the official openai package (the
// test's server on another port than the one the document names), and
// what it prints is what the document shows.
func TestProtocolsDocClientTool(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and node")
	section := docSection(t, "protocols.md", "**A function tool of the client's, worked.**", "\nWorked example, with the official")
	blocks := fenced(section)
	if len(blocks) != 4 || blocks[0].lang != "yaml" || blocks[1].lang != "yaml" || blocks[2].lang != "js" || blocks[3].lang != "" {
		t.Fatalf("the worked client tool should show agentrt.yaml, local_time.yaml, the script and its output; it has %d blocks", len(blocks))
	}
	config, script, js, want := blocks[0].text, blocks[1].text, blocks[2].text, blocks[3].text
	const docAddr = "127.0.0.1:18931"
	if !strings.Contains(section, "agentrt serve --addr "+docAddr) || !strings.Contains(js, "'http://"+docAddr+"/v1'") {
		t.Fatalf("the document's server and the script's base URL should both be %s", docAddr)
	}

	e := newEnv(t, config, map[string]string{"local_time.yaml": script})
	srv := startServe(t, e, nil)
	node := needTool(t, "node")
	_, file, _, _ := runtime.Caller(0)
	modules := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "node", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		t.Fatalf("the npm packages of testdata/node are not installed (scripts/test.sh installs them): %v", err)
	}
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "client-tool.mjs"), strings.Replace(js, docAddr, strings.TrimPrefix(srv.url, "http://"), 1))

	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client-tool.mjs")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != want {
		t.Errorf("node client-tool.mjs: %v\nprinted\n%s\nthe document shows\n%s\nstderr:\n%s", err, out, want, stderr.String())
	}
	srv.stopOK()
}
