package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	art "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testenv"
)

// agentrt serve on SQLite on a real filesystem that fills up (a small
// tmpfs, mounted as root) while a turn calls a tool: the turn's stream
// ends with a stream_error saying the run stopped without storing its
// end (not heartbeats for ever), /readyz is 503 while the disk is full,
// and once space is freed the same process resumes the run to its end,
// the tool run once (its side effect is outside the tmpfs), and is ready
// again.
func TestServeProcessDiskFull(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve on a tmpfs it fills")
	disk := testenv.Tmpfs(t, 4<<20)
	e := newEnvStore(t, "sqlite:"+filepath.Join(disk, "agentrt.db"), `
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT}"}
agents:
  assistant: {model: s, tools: [fill]}
`, map[string]string{
		"full.yaml": "replies:\n  - tool_calls: [{name: fill, arguments: {line: fill}}]\n" +
			"  - text: the disk was full\n    expect: {last_tool_result_contains: filled the disk}\n",
	})
	journal := filepath.Join(e.dir, "journal") // outside the tmpfs
	filler := filepath.Join(disk, "filler")
	s := startServe(t, e, []string{"AGENTRT_JOURNAL=" + journal, "AGENTRT_FILL=" + filler, "AGENTRT_TEST_SCRIPT=full.yaml"})
	api := newAPI(t, s.url, "")
	api.createSession("s1")
	if code, body, _ := api.do("GET", "/readyz", nil); code != http.StatusOK {
		t.Fatalf("readyz before: %d %s", code, body)
	}

	ctx, cancel := context.WithTimeout(t.Context(), procTimeout) // a stream that never ends fails
	defer cancel()
	resp := api.openStream(api.request(ctx, "POST", "/v1/sessions/s1/messages", map[string]string{"text": "fill the disk"}))
	var evs []sseEvent
	err := readSSE(resp.Body, func(ev sseEvent) bool { evs = append(evs, ev); return true })
	resp.Body.Close()
	if ctx.Err() != nil {
		t.Fatalf("the turn's stream did not end when its run stopped: %v (%v)", evs, err)
	}
	if len(evs) == 0 || evs[len(evs)-1].Event != "stream_error" {
		t.Fatalf("the turn's stream ended with %v, want a stream_error last; stderr:\n%s", evs, s.stderrText())
	}
	var failed struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &failed); err != nil || failed.Error.Code != art.CodeEndNotStored ||
		!strings.Contains(failed.Error.Message, "resumes it once the store accepts writes") {
		t.Fatalf("the stream_error: %s, want end_not_stored saying this process resumes the run", evs[len(evs)-1].Data)
	}
	if len(eventsOf(evs, "tool_call")) != 1 || len(eventsOf(evs, "run_finished")) != 0 {
		t.Fatalf("the turn's stream: %v, want its tool call and no end", evs)
	}
	code, body, _ := api.do("GET", "/readyz", nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "refused writes") {
		t.Errorf("readyz on a full disk: %d %s, want 503 saying the store refuses writes", code, body)
	}

	// Space is freed: the same process resumes the run.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	last := lastID(t, evs)
	c := startCurl(t, s.url+"/v1/sessions/s1/events", last)
	resumed := c.until("the resumed run's end", typeIs("run_finished"))
	checkIDs(t, "the stream after the resume", resumed, last+1, lastID(t, resumed))
	if rs := eventsOf(resumed, "run_resumed"); len(rs) != 1 || !strings.Contains(rs[0].Data, `"reason":"store"`) {
		t.Errorf("run_resumed: %v, want one with reason store", rs)
	}
	if st := runStatus(t, resumed[len(resumed)-1]); st != "done" {
		t.Errorf("the resumed run ended %s: %v", st, resumed)
	}
	if fin := eventsOf(resumed, "final"); len(fin) != 1 || !strings.Contains(fin[0].Data, "the disk was full") {
		t.Errorf("final: %v", fin)
	}
	if runs := journalRuns(t, journal); len(runs) != 1 || !strings.HasPrefix(runs[0], "fill ") {
		t.Errorf("the tool's runs: %q, want one", runs)
	}
	if code, body, _ := api.do("GET", "/readyz", nil); code != http.StatusOK {
		t.Errorf("readyz once space is freed: %d %s", code, body)
	}
	s.stopOK()
}
