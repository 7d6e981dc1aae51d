package server_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	oai "github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session"
)

var (
	testPNG = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	testPDF = []byte("%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF\n")
	// bigPNG is over the rig's MaxFileBytes.
	bigPNG = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2048)...)
)

const rigMaxFile = 1024

// src is an image or a file as a test sends it: each adapter takes what
// its protocol carries (a data: URL, base64 and a type, or a URL).
type src struct {
	dataURL string // data:TYPE;base64,… (OpenAI)
	b64     string // the bytes, base64 (AG-UI's data source, A2A's raw)
	typ     string // their media type, when b64 is set
	url     string // a URL to fetch (every adapter), a data: URL too
}

func bytesSrc(typ string, b []byte) src {
	e := base64.StdEncoding.EncodeToString(b)
	return src{dataURL: "data:" + typ + ";base64," + e, b64: e, typ: typ}
}

// mediaProtocol is one adapter as a test drives it.
type mediaProtocol struct {
	name string
	// send sends a new conversation's message — text, image, and a PDF
	// unless pdf is nil — to agent seer, in session (or thread, context)
	// id when the protocol names one; it returns the HTTP status and
	// body, and the session that answered (from the answer, or id).
	send func(t *testing.T, rig *mediaRig, id, text string, image, pdf *src) (int, []byte, string)
	// code reads the error's code from the protocol's error shape.
	code func(body []byte) string
}

// mediaRig is a server with every adapter over agent seer, whose model (a
// recording OpenAI-compatible server) takes images and PDFs, and a file
// server on 127.0.0.1 the server may fetch from (its address only).
type mediaRig struct {
	f     *fixture
	llm   *fakellm.Server
	files *httptest.Server
}

func newMediaRig(t *testing.T, fetch server.FetchConfig) *mediaRig {
	t.Helper()
	rig := &mediaRig{llm: fakellm.Start(t)}
	llm, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: rig.llm.URL + "/v1", APIKey: "k", Media: []string{"image/*", "application/pdf"}})
	if err != nil {
		t.Fatal(err)
	}
	rig.files = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/shot.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(testPNG)
		case "/a.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = w.Write(testPDF)
		case "/big.png":
			_, _ = w.Write(bigPNG)
		case "/most.png":
			_, _ = w.Write(bigPNG[:rigMaxFile])
		case "/to":
			http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(rig.files.Close)
	rig.f = newFixture(t, options{
		agents:  []*agentrt.Agent{{Name: "seer", Model: llm}},
		gateway: func(c *gateway.Config) { c.MaxFileBytes, c.MaxInputFileBytes = rigMaxFile, 3*rigMaxFile/2 },
		config:  func(c *server.Config) { c.Fetch = fetch },
	})
	if _, err := oai.Mount(rig.f.srv, oai.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := agui.Mount(rig.f.srv); err != nil {
		t.Fatal(err)
	}
	if err := a2a.Mount(rig.f.srv, a2a.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := mcp.Mount(rig.f.srv, mcp.Config{}); err != nil {
		t.Fatal(err)
	}
	return rig
}

// openAICode reads {"error":{"code"}}, the shape of the OpenAI adapter
// and of the server (AG-UI's refusals before its stream).
func openAICode(body []byte) string {
	var e struct{ Error struct{ Code string } }
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}

var mediaProtocols = []mediaProtocol{
	{name: "openai chat", code: openAICode, send: func(t *testing.T, rig *mediaRig, id, text string, image, pdf *src) (int, []byte, string) {
		content := []any{map[string]any{"type": "text", "text": text},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": cmpOr(image.dataURL, image.url)}}}
		if pdf != nil {
			f := map[string]any{"filename": "a.pdf", "file_data": pdf.dataURL}
			if pdf.dataURL == "" {
				f = map[string]any{"filename": "a.pdf", "file_url": pdf.url} // as the Responses API's input_file
			}
			content = append(content, map[string]any{"type": "file", "file": f})
		}
		code, body, hdr := rig.f.do(t, "POST", "/v1/chat/completions", "", map[string]any{"model": "seer",
			"messages": []any{map[string]any{"role": "user", "content": content}}})
		return code, body, hdr.Get(oai.SessionHeader)
	}},
	{name: "openai responses", code: openAICode, send: func(t *testing.T, rig *mediaRig, id, text string, image, pdf *src) (int, []byte, string) {
		content := []any{map[string]any{"type": "input_text", "text": text},
			map[string]any{"type": "input_image", "image_url": cmpOr(image.dataURL, image.url)}}
		if pdf != nil {
			f := map[string]any{"type": "input_file", "filename": "a.pdf", "file_data": pdf.dataURL}
			if pdf.dataURL == "" {
				f = map[string]any{"type": "input_file", "file_url": pdf.url}
			}
			content = append(content, f)
		}
		code, body, hdr := rig.f.do(t, "POST", "/v1/responses", "", map[string]any{"model": "seer",
			"input": []any{map[string]any{"role": "user", "content": content}}})
		return code, body, hdr.Get(oai.SessionHeader)
	}},
	{name: "ag-ui", code: openAICode, send: func(t *testing.T, rig *mediaRig, id, text string, image, pdf *src) (int, []byte, string) {
		source := func(s *src) map[string]any {
			if s.b64 != "" {
				return map[string]any{"type": "data", "value": s.b64, "mimeType": s.typ}
			}
			return map[string]any{"type": "url", "value": s.url}
		}
		content := []any{map[string]any{"type": "text", "text": text}, map[string]any{"type": "image", "source": source(image)}}
		if pdf != nil {
			content = append(content, map[string]any{"type": "document", "source": source(pdf)})
		}
		code, body, _ := rig.f.do(t, "POST", "/v1/agui/seer", "", map[string]any{"threadId": id, "runId": "r1",
			"messages": []any{map[string]any{"id": "m-" + id, "role": "user", "content": content}}})
		return code, body, id
	}},
	{name: "a2a", code: a2aCode, send: func(t *testing.T, rig *mediaRig, id, text string, image, pdf *src) (int, []byte, string) {
		part := func(s *src, name string) map[string]any {
			if s.b64 != "" {
				return map[string]any{"raw": s.b64, "mediaType": s.typ, "filename": name}
			}
			return map[string]any{"url": s.url, "filename": name}
		}
		parts := []any{map[string]any{"text": text}, part(image, "shot.png")}
		if pdf != nil {
			parts = append(parts, part(pdf, "a.pdf"))
		}
		code, body, _ := rig.f.do(t, "POST", "/v1/a2a/seer", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
			"params": map[string]any{"message": map[string]any{"messageId": "m-" + id, "role": "ROLE_USER", "contextId": id, "parts": parts}}})
		return code, body, id
	}},
}

// a2aCode reads a JSON-RPC error: agentrt's code when it gives one, else
// A2A's reason; "" for an answer that is no error.
func a2aCode(body []byte) string {
	var e struct {
		Error *struct {
			Data []struct {
				Reason   string
				Metadata map[string]string
			}
		}
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil || len(e.Error.Data) == 0 {
		return ""
	}
	return cmpOr(e.Error.Data[0].Metadata["agentrt.code"], e.Error.Data[0].Reason)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// startedMedia is the media of the first run_started of session id.
func (rig *mediaRig) startedMedia(t *testing.T, id string) []model.Media {
	t.Helper()
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	for ev, err := range rig.f.store.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(*session.RunStarted); ok {
			return d.Media
		}
	}
	t.Fatalf("session %s has no run_started", id)
	return nil
}

// lastUserContent is the content parts of the last user message of the
// model's last request.
func (rig *mediaRig) lastUserContent(t *testing.T) []any {
	t.Helper()
	reqs := rig.llm.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	msgs := reqs[len(reqs)-1]["messages"].([]any)
	content, _ := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	return content
}

// sessions counts the store's sessions.
func (rig *mediaRig) sessions(t *testing.T) int {
	t.Helper()
	ss, err := rig.f.store.ListSessions(session.WithTenant(t.Context(), session.DefaultTenant), session.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(ss)
}

// An image and a PDF a client sends through each adapter — as bytes, and
// by a URL the server fetches — are the turn's media (run_started) and
// reach a model that takes them as data URLs.
func TestAdaptersCarryMedia(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{AllowedHosts: []string{"127.0.0.1"}, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	png, pdf := bytesSrc("image/png", testPNG), bytesSrc("application/pdf", testPDF)
	wantImage := map[string]any{"type": "image_url", "image_url": map[string]any{"url": png.dataURL}}
	for i, p := range mediaProtocols {
		for _, how := range []string{"bytes", "url"} {
			img, doc := png, pdf
			if how == "url" {
				img, doc = src{url: rig.files.URL + "/shot.png"}, src{url: rig.files.URL + "/a.pdf"}
			}
			id := fmt.Sprintf("media-%d-%s", i, how)
			code, body, sess := p.send(t, rig, id, "what is this?", &img, &doc)
			if code != http.StatusOK || sess == "" || p.code(body) != "" {
				t.Errorf("%s (%s): %d %s (session %q)", p.name, how, code, body, sess)
				continue
			}
			// AG-UI's parts carry no file name: a fetched file has its URL's.
			name := "a.pdf"
			if p.name == "ag-ui" && how == "bytes" {
				name = ""
			}
			got := rig.startedMedia(t, sess)
			if len(got) != 2 || got[0].Type != "image/png" || got[0].Size != int64(len(testPNG)) ||
				got[1].Type != "application/pdf" || got[1].Size != int64(len(testPDF)) || got[1].Name != name {
				t.Errorf("%s (%s): run_started.media %+v, want the image, then the PDF (%q)", p.name, how, got, name)
			}
			wantPDF := map[string]any{"type": "file", "file": map[string]any{"filename": cmpOr(name, "file"), "file_data": pdf.dataURL}}
			content := rig.lastUserContent(t)
			if len(content) != 3 {
				t.Errorf("%s (%s): the model's user message %v, want text, image, file", p.name, how, content)
				continue
			}
			if diff := cmp.Diff([]any{map[string]any{"type": "text", "text": "what is this?"}, wantImage, wantPDF}, content); diff != "" {
				t.Errorf("%s (%s): the model got (-want +got):\n%s", p.name, how, diff)
			}
		}
	}
}

// Bad media is refused in each protocol's error shape, with a code a
// client can act on, before anything is stored: no session, no blob.
func TestAdaptersRefuseBadMedia(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{AllowedHosts: []string{"*"}, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	port := rig.files.Listener.Addr().(*net.TCPAddr).Port
	big := bytesSrc("image/png", bigPNG)
	html := bytesSrc("text/html", []byte("<p>hi</p>"))
	for _, tc := range []struct {
		name   string
		image  src
		status int
		code   string
		a2a    string // A2A's code, when it differs
	}{
		// A2A's raw bytes are base64 in JSON: a2a-go refuses them first.
		{"bad base64", src{dataURL: "data:image/png;base64,%%%", b64: "%%%", typ: "image/png", url: "data:image/png;base64,%%%"}, 400, "bad_part", "INVALID_PARAMS"},
		{"malformed data url", src{dataURL: "data:image/png;base64", url: "data:image/png;base64"}, 400, "bad_part", ""},
		{"no media type", src{dataURL: "data:not a type;;base64,eA==", b64: "eA==", typ: "not a type;;", url: "data:not a type;;base64,eA=="}, 400, "bad_part", "CONTENT_TYPE_NOT_SUPPORTED"},
		{"not an image", html, 400, "bad_part", "-"},
		{"too large", big, 413, "input_too_large", ""},
		{"too large by url", src{url: rig.files.URL + "/big.png"}, 413, "input_too_large", ""},
		{"metadata service", src{url: "http://169.254.169.254/latest/meta-data/"}, 400, "url_refused", ""},
		{"private", src{url: "http://10.1.2.3/x.png"}, 400, "url_refused", ""},
		{"loopback v6", src{url: fmt.Sprintf("http://[::1]:%d/shot.png", port)}, 400, "url_refused", ""},
		{"redirect to loopback", src{url: rig.files.URL + "/to?u=" + url.QueryEscape(fmt.Sprintf("http://127.0.0.2:%d/shot.png", port))}, 400, "url_refused", ""},
		{"redirect to metadata", src{url: rig.files.URL + "/to?u=" + url.QueryEscape("http://169.254.169.254/")}, 400, "url_refused", ""},
		{"not http", src{url: "file:///etc/passwd"}, 400, "url_refused", ""},
		{"not found", src{url: rig.files.URL + "/nope.png"}, 400, "bad_part", ""},
	} {
		for i, p := range mediaProtocols {
			want, status := tc.code, tc.status
			if p.name == "a2a" {
				status = http.StatusOK // JSON-RPC errors are answers
				if tc.a2a == "-" {
					continue // A2A's parts have no kind: any type is a file
				}
				want = cmpOr(tc.a2a, want)
			}
			id := fmt.Sprintf("bad-%d-%s", i, strings.ReplaceAll(tc.name, " ", "-"))
			before := rig.sessions(t)
			img := tc.image
			code, body, _ := p.send(t, rig, id, "see", &img, nil)
			if code != status || p.code(body) != want {
				t.Errorf("%s, %s: %d %s; want %d %s", p.name, tc.name, code, body, status, want)
			}
			if n := rig.sessions(t); n != before {
				t.Errorf("%s, %s: %d sessions after the refusal, %d before", p.name, tc.name, n, before)
			}
		}
	}
	// The bytes refused as too large are not kept.
	sum := sha256.Sum256(bigPNG)
	_, _, err := rig.f.store.(session.Blobs).GetBlob(session.WithTenant(t.Context(), session.DefaultTenant), hex.EncodeToString(sum[:]))
	if !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the refused file's blob: %v, want not found", err)
	}
}

// A server whose fetch settings are the zero value fetches no URL: a
// client is told to send the bytes.
func TestFetchOffByDefault(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{})
	for _, p := range mediaProtocols {
		img := src{url: rig.files.URL + "/shot.png"}
		code, body, _ := p.send(t, rig, "off-"+strings.ReplaceAll(p.name, " ", "-"), "see", &img, nil)
		if got := p.code(body); got != "url_refused" || !strings.Contains(string(body), "fetches no URLs") {
			t.Errorf("%s: %d %s, want url_refused: fetches no URLs", p.name, code, body)
		}
	}
}

// With the default address check, every host allowed, no URL that is or
// leads to this machine, a private or link-local address is fetched: by
// its address, a name for it, or an IPv6 form of it.
func TestFetchRefusesNonPublic(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{AllowedHosts: []string{"*"}})
	port := rig.files.Listener.Addr().(*net.TCPAddr).Port
	for _, u := range []string{
		rig.files.URL + "/shot.png",
		fmt.Sprintf("http://localhost:%d/shot.png", port),
		fmt.Sprintf("http://[::1]:%d/shot.png", port),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/shot.png", port),
		"http://10.0.0.1/shot.png",
		"http://169.254.169.254/latest/meta-data/",
	} {
		for _, p := range mediaProtocols {
			img := src{url: u}
			before := rig.sessions(t)
			code, body, _ := p.send(t, rig, fmt.Sprintf("nonpublic-%d", rig.sessions(t)), "see", &img, nil)
			if got := p.code(body); got != "url_refused" || !strings.Contains(string(body), "address") {
				t.Errorf("%s, %s: %d %s, want url_refused naming the address", p.name, u, code, body)
			}
			if n := rig.sessions(t); n != before {
				t.Errorf("%s, %s: a session was made", p.name, u)
			}
		}
	}
}

// A file named by a handle of its provider (OpenAI's file_id, AG-UI's
// file source) is refused, saying to send the bytes: this server keeps
// no provider's files.
func TestAdaptersRefuseFileHandles(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{})
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"seer","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"/v1/responses", `{"model":"seer","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-abc"}]}]}`, "input[0].content[0].file_id"},
		{"/v1/responses", `{"model":"seer","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-abc"}]}]}`, "input[0].content[0].file_id"},
		{"/v1/agui/seer", `{"threadId":"h1","runId":"r1","messages":[{"id":"m","role":"user","content":[{"type":"image","source":{"type":"file","value":"file-abc"}}]}]}`, ""},
	} {
		code, body, _ := rig.f.do(t, "POST", tc.path, "", tc.body)
		var e struct {
			Error struct {
				Code, Message string
				Param         *string
			}
		}
		_ = json.Unmarshal(body, &e)
		if code != http.StatusBadRequest || e.Error.Code != "malformed_request" || !strings.Contains(e.Error.Message, "bytes") ||
			(tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param)) {
			t.Errorf("%s %s: %d %s; want 400 malformed_request at %q", tc.path, tc.body, code, body, tc.param)
		}
	}
	if n := rig.sessions(t); n != 0 {
		t.Errorf("%d sessions after refusals only", n)
	}
}

// An A2A message with a file sent again (the same messageId) is the same
// input, answered by the same task: the gateway keeps its file once, and
// the message's parts, the file's included, are what it stored.
func TestA2AFileSentAgain(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{})
	png := bytesSrc("image/png", testPNG)
	var a2aProto mediaProtocol
	for _, p := range mediaProtocols {
		if p.name == "a2a" {
			a2aProto = p
		}
	}
	var tasks []string
	for range 2 {
		code, body, _ := a2aProto.send(t, rig, "again", "see", &png, nil)
		var out struct {
			Result struct{ Task struct{ ID string } }
		}
		if code != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Result.Task.ID == "" {
			t.Fatalf("SendMessage: %d %s", code, body)
		}
		tasks = append(tasks, out.Result.Task.ID)
	}
	if tasks[0] != tasks[1] {
		t.Errorf("the message sent again is task %s, the first %s", tasks[1], tasks[0])
	}
	if n := len(rig.llm.Requests()); n != 1 {
		t.Errorf("the model was called %d times, want once", n)
	}
}

// The files of one message are bounded together, as they are read: a
// message naming more than an input may hold is refused once the bytes
// read pass the bound, without reading the rest.
func TestAdaptersBoundAMessagesFiles(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{AllowedHosts: []string{"127.0.0.1"}, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	for i, p := range mediaProtocols {
		most := src{url: rig.files.URL + "/most.png"}
		code, body, _ := p.send(t, rig, fmt.Sprintf("bound-%d", i), "see", &most, &most)
		want := http.StatusRequestEntityTooLarge
		if p.name == "a2a" {
			want = http.StatusOK
		}
		if code != want || p.code(body) != "input_too_large" || !strings.Contains(string(body), "the input's files hold more than") {
			t.Errorf("%s: %d %s; want input_too_large", p.name, code, body)
		}
	}
	if n := rig.sessions(t); n != 0 {
		t.Errorf("%d sessions after refusals only", n)
	}
}

// The native API's files take a URL as the adapters' parts do: a data:
// URL, or an http(s) URL of a host server.fetch allows — fetched, kept,
// the turn's media; refused (url_refused, nothing stored) otherwise, and
// a file with both data and url, or neither, is bad_part.
func TestMessageFileURL(t *testing.T) {
	t.Parallel()
	rig := newMediaRig(t, server.FetchConfig{AllowedHosts: []string{"127.0.0.1"}, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	png := bytesSrc("image/png", testPNG)
	if code, body, _ := rig.f.do(t, "POST", "/v1/sessions", "", map[string]any{"id": "native", "agent": "seer"}); code/100 != 2 {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body, _ := rig.f.do(t, "POST", "/v1/sessions/native/messages", "", map[string]any{"text": "what is this?",
		"files": []any{map[string]any{"url": rig.files.URL + "/shot.png"}, map[string]any{"url": png.dataURL, "name": "inline.png"}}},
		"Accept", "text/event-stream")
	if code != http.StatusOK || !strings.Contains(string(body), "run_finished") {
		t.Fatalf("the message: %d %s", code, body)
	}
	got := rig.startedMedia(t, "native")
	if len(got) != 2 || got[0].Name != "shot.png" || got[0].Type != "image/png" || got[1].Name != "inline.png" || got[1].Size != int64(len(testPNG)) {
		t.Errorf("run_started.media: %+v", got)
	}
	for _, tc := range []struct {
		file map[string]any
		code string
	}{
		{map[string]any{"url": "http://169.254.169.254/latest/meta-data"}, agentrt.CodeURLRefused},
		{map[string]any{"url": "http://localhost:1/x.png"}, agentrt.CodeURLRefused},
		{map[string]any{"url": png.dataURL, "data": png.b64}, agentrt.CodeBadPart},
		{map[string]any{"name": "nothing.png"}, agentrt.CodeBadPart},
		{map[string]any{"url": "data:image/png;base64,%%%"}, agentrt.CodeBadPart},
	} {
		code, body, _ := rig.f.do(t, "POST", "/v1/sessions/native/messages", "", map[string]any{"text": "see", "files": []any{tc.file}})
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
			t.Errorf("%v: %d %s, want 400 %s", tc.file, code, body, tc.code)
		}
	}
	ins, err := rig.f.store.(session.Inbox).Inputs(session.WithTenant(t.Context(), session.DefaultTenant), "native", 0, 0)
	if err != nil || len(ins) != 1 {
		t.Errorf("%d inputs (%v): the refused messages stored some", len(ins), err)
	}
}
