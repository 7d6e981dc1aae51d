package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/session"
)

// docsExample returns docs/http-api.md's example of an input with parts:
// the body its curl posts, and the run_started input it shows.
func docsExample(t *testing.T) (body json.RawMessage, input string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "An input is `text`, `parts`, or both.")
	if !ok {
		t.Fatal("docs/http-api.md does not describe an input's parts")
	}
	post := regexp.MustCompile(`(?s)\$ curl [^\n]*/messages .*?-d '([^']*)'`).FindStringSubmatch(rest)
	shown := regexp.MustCompile(`"type":"run_started",.*?"input":("(?:[^"\\]|\\.)*")`).FindStringSubmatch(rest)
	if post == nil || shown == nil {
		t.Fatal("docs/http-api.md's parts example has no curl -d body or no run_started input")
	}
	if err := json.Unmarshal([]byte(shown[1]), &input); err != nil {
		t.Fatalf("the input docs/http-api.md shows: %v", err)
	}
	return json.RawMessage(post[1]), input
}

// docs/http-api.md's input with text and parts, posted as it shows: the
// turn's input is the message it shows, and the parts are stored as they
// came. A part of another type and a blank input are refused before
// anything is stored.
func TestInputParts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{})
	id := f.create(t, "")
	body, want := docsExample(t)
	var started *session.RunStarted
	for e := range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", body) {
		if d, ok := e.ev.Data.(*session.RunStarted); e.ev != nil && ok {
			started = d
		}
		if e.typ == "run_finished" {
			break
		}
	}
	if started == nil || started.Input != want {
		t.Fatalf("run_started %+v, want the input docs/http-api.md shows, %q", started, want)
	}
	inputs, err := f.store.(session.Inbox).Inputs(t.Context(), id, 0, 10)
	if err != nil || len(inputs) != 1 {
		t.Fatalf("the inbox: %v %v", inputs, err)
	}
	var posted struct {
		Text  string
		Parts []session.InputPart
	}
	if err := json.Unmarshal(body, &posted); err != nil {
		t.Fatal(err)
	}
	parts := inputs[0].Parts
	if len(parts) != len(posted.Parts)+1 || parts[0].Text != posted.Text || parts[len(parts)-1].Type != "data" ||
		string(parts[len(parts)-1].Data) != string(posted.Parts[len(posted.Parts)-1].Data) {
		t.Errorf("stored parts %+v, want the text, then the parts as posted", parts)
	}

	for _, tc := range []struct{ body, code string }{
		{`{"parts":[{"type":"image","text":"x"}]}`, "bad_part"},
		{`{"parts":[{"type":"text","text":"x","data":{"a":1}}]}`, "bad_part"},
		{`{"parts":[{"type":"text","text":"  "}]}`, "empty_input"},
		{`{"text":"","parts":[]}`, "empty_input"},
	} {
		code, out, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", tc.body)
		var e struct{ Error struct{ Code string } }
		if code != http.StatusBadRequest || json.Unmarshal(out, &e) != nil || tc.code != "" && e.Error.Code != tc.code {
			t.Errorf("POST messages %s: %d %s, want 400 %s", tc.body, code, out, tc.code)
		}
	}
}

// A message's files (base64) reach its turn as blobs the store keeps,
// named in run_started; a file of no media type, or not base64, is
// refused before anything is stored.
func TestInputFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{})
	id := f.create(t, "")
	png := []byte("\x89PNG\r\n\x1a\n-an-image")
	body := map[string]any{"text": "what is this?", "files": []map[string]any{{"name": "shot.png", "media_type": "image/png", "data": png}}}
	var started *session.RunStarted
	for e := range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", body) {
		if d, ok := e.ev.Data.(*session.RunStarted); e.ev != nil && ok {
			started = d
		}
		if e.typ == "run_finished" {
			break
		}
	}
	if started == nil || len(started.Media) != 1 || started.Media[0].Name != "shot.png" || started.Media[0].Size != int64(len(png)) {
		t.Fatalf("run_started: %+v", started)
	}
	_, data, err := f.store.(session.Blobs).GetBlob(session.WithTenant(t.Context(), session.DefaultTenant), started.Media[0].Hash)
	if err != nil || string(data) != string(png) {
		t.Errorf("the blob: %q %v", data, err)
	}
	for _, bad := range []string{
		`{"files":[{"media_type":"not a type;;","data":"eA=="}]}`,
		`{"files":[{"media_type":"image/png","data":"%%%"}]}`,
		`{"files":[{"media_type":"image/png","data":""}]}`,
	} {
		if code, b, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, code, b)
		}
	}
}
