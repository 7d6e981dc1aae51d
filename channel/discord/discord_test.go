package discord_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/channeltest"
	"github.com/agentrt/agentrt/channel/discord"
	"github.com/agentrt/agentrt/model/scripted"
)

// restAPI is a fake Discord REST API: create, edit and type in a
// channel's messages as https://discord.com/developers/docs/resources/message
// documents them; a nonce enforced within its window gives the message
// made with it.
type restAPI struct {
	t      *testing.T
	mu     sync.Mutex
	posted []map[string]any
	edits  []map[string]any
	nonces map[string]string
	typing int
	fail   func() (status int, body string)
}

func (a *restAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/attachments/") {
		// Discord's CDN: a signed URL, no token.
		w.Header().Set("Content-Type", "image/png")
		_, _ = io.WriteString(w, "\x89PNG-attached")
		return
	}
	if r.Header.Get("Authorization") != "Bot bot-token" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"message": "401: Unauthorized", "code": 0}`)
		return
	}
	var req map[string]any
	if r.Body != nil {
		_ = json.NewDecoder(r.Body).Decode(&req)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		if status, body := a.fail(); status != 0 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
			return
		}
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v10")
	switch {
	case r.Method == "POST" && strings.HasSuffix(path, "/typing"):
		a.typing++
		w.WriteHeader(http.StatusNoContent)
	case r.Method == "POST" && strings.HasSuffix(path, "/messages"):
		n, _ := req["nonce"].(string)
		if id, ok := a.nonces[n]; ok && req["enforce_nonce"] == true {
			_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "content": req["content"]})
			return
		}
		a.posted = append(a.posted, req)
		id := strconv.Itoa(1000 + len(a.posted))
		if a.nonces == nil {
			a.nonces = map[string]string{}
		}
		a.nonces[n] = id
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "channel_id": strings.Split(path, "/")[2], "content": req["content"]})
	case r.Method == "PATCH":
		req["path"] = path
		a.edits = append(a.edits, req)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x"})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (a *restAPI) snapshot() (posted, edits []map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.posted...), append([]map[string]any(nil), a.edits...)
}

type rig struct {
	*channeltest.Rig
	api  *restAPI
	priv ed25519.PrivateKey
	url  string // the fake API's
}

func newRig(t *testing.T, replies ...scripted.Reply) *rig {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	api := &restAPI{t: t}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ch, err := discord.New(discord.Config{PublicKey: hex.EncodeToString(pub), BotToken: "bot-token", APIURL: srv.URL + "/api/v10"})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{channeltest.New(t, channel.Binding{Name: "dc", Channel: ch}, replies...), api, priv, srv.URL}
}

// post signs body as Discord does (Ed25519 of the timestamp and the body)
// at time at, and posts it.
func (g *rig) post(body string, at time.Time) (int, string) {
	ts := strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(g.priv, []byte(ts+body))
	return g.Post("interactions", body, "X-Signature-Ed25519", hex.EncodeToString(sig), "X-Signature-Timestamp", ts, "Content-Type", "application/json")
}

// command is a slash command's interaction in a guild channel, as
// https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object
// shows one.
func command(id, text string) string {
	return `{"id":"` + id + `","application_id":"775799577604522054","type":2,"data":{"id":"771825006014889984","name":"ask","type":1,` +
		`"options":[{"name":"text","type":3,"value":` + strconv.Quote(text) + `}]},"guild_id":"772904309264089089","channel_id":"772908445358620702",` +
		`"member":{"user":{"id":"53908232506183680","username":"mason","global_name":"Mason"},"roles":[],"permissions":"2147483647"},` +
		`"token":"A_UNIQUE_TOKEN","version":1}`
}

// PING is answered with PONG; a bad signature or an old timestamp is
// 401; a command is acknowledged with the question quoted, is one input
// however often it comes, and is answered in the channel with an enforced
// nonce.
func TestInteractions(t *testing.T) {
	g := newRig(t, scripted.Reply{Text: "Answer **here**"})
	if code, body := g.post(`{"id":"1","type":1,"application_id":"775799577604522054","token":"t","version":1}`, time.Now()); code != 200 || body != `{"type":1}` {
		t.Errorf("PING: %d %s", code, body)
	}
	cmd := command("786008729715212338", "what is 6*7?")
	if code, _ := g.post(cmd, time.Now().Add(-10*time.Minute)); code != 401 {
		t.Errorf("an old timestamp: %d", code)
	}
	if code, _ := g.Post("interactions", cmd, "X-Signature-Ed25519", strings.Repeat("ab", 64), "X-Signature-Timestamp", strconv.FormatInt(time.Now().Unix(), 10)); code != 401 {
		t.Errorf("a bad signature: %d", code)
	}
	for range 2 {
		code, body := g.post(cmd, time.Now())
		if code != 200 || !strings.Contains(body, `"type":4`) || !strings.Contains(body, "what is 6*7?") {
			t.Fatalf("the command: %d %s", code, body)
		}
	}
	g.DeliverUntil("the answer", func() bool { p, _ := g.api.snapshot(); return len(p) == 1 })
	p, _ := g.api.snapshot()
	if p[0]["content"] != "Answer **here**" || p[0]["enforce_nonce"] != true || p[0]["nonce"] == "" {
		t.Errorf("the answer: %v", p[0])
	}
	if in := g.Inputs("dc:772908445358620702"); len(in) != 1 || in[0].Metadata["sender_name"] != "Mason" {
		t.Errorf("the inputs: %+v", in)
	}
}

// An approval has buttons; a press is acknowledged with a deferred update
// and answers it; the question's message is edited to say who decided.
// A 429 waits for its retry_after.
func TestButtons(t *testing.T) {
	g := newRig(t,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"})
	g.post(command("9001", "deploy"), time.Now())
	g.DeliverUntil("the question", func() bool { p, _ := g.api.snapshot(); return len(p) == 1 })
	p, _ := g.api.snapshot()
	row := p[0]["components"].([]any)[0].(map[string]any)["components"].([]any)
	approve := row[0].(map[string]any)["custom_id"].(string)
	var tries int
	g.api.mu.Lock()
	g.api.fail = func() (int, string) {
		if tries++; tries == 1 {
			return http.StatusTooManyRequests, `{"message":"You are being rate limited.","retry_after":1.5,"global":false}`
		}
		return 0, ""
	}
	g.api.mu.Unlock()
	press := `{"id":"9002","type":3,"application_id":"775799577604522054","channel_id":"772908445358620702","guild_id":"772904309264089089",` +
		`"member":{"user":{"id":"53908232506183680","username":"mason"}},"message":{"id":"` + "1001" + `"},"data":{"custom_id":` + strconv.Quote(approve) + `,"component_type":2},"token":"T2","version":1}`
	if code, body := g.post(press, time.Now()); code != 200 || body != `{"type":6}` {
		t.Fatalf("the press: %d %s", code, body)
	}
	g.DeliverUntil("the 429", func() bool {
		g.api.mu.Lock()
		defer g.api.mu.Unlock()
		return tries >= 1
	})
	g.Skew.Store(int64(2 * time.Second))
	g.DeliverUntil("the edit and the answer", func() bool { p, e := g.api.snapshot(); return len(p) == 2 && len(e) == 1 })
	p, e := g.api.snapshot()
	if e[0]["path"] != "/channels/772908445358620702/messages/1001" || !strings.Contains(e[0]["content"].(string), "Approved by 53908232506183680") {
		t.Errorf("the edit: %v", e[0])
	}
	if p[1]["content"] != "deployed" {
		t.Errorf("the answer: %v", p[1])
	}
}

// A command's attachment (an option of type 11, resolved) is downloaded
// from Discord's CDN and reaches the turn; an attachment URL of another
// host is not fetched, and named in the text instead.
func TestAttachment(t *testing.T) {
	g := newRig(t, scripted.Reply{Text: "a screenshot"})
	cmd := func(id, url string) string {
		return `{"id":"` + id + `","type":2,"application_id":"775799577604522054","channel_id":"772908445358620702",` +
			`"member":{"user":{"id":"53908232506183680","username":"mason"}},"token":"T","version":1,` +
			`"data":{"id":"1","name":"ask","type":1,"options":[{"name":"text","type":3,"value":"what is this?"},{"name":"file","type":11,"value":"1100"}],` +
			`"resolved":{"attachments":{"1100":{"id":"1100","filename":"shot.png","content_type":"image/png","size":13,"url":"` + url + `"}}}}}`
	}
	if code, _ := g.post(cmd("7001", g.url+"/attachments/1/1100/shot.png?ex=1&is=2&hm=3"), time.Now()); code != 200 {
		t.Fatal(code)
	}
	g.DeliverUntil("the answer", func() bool { p, _ := g.api.snapshot(); return len(p) == 1 })
	started := g.RunStarted("dc:772908445358620702")
	if started == nil || len(started.Media) != 1 || started.Media[0].Name != "shot.png" || started.Media[0].Size != 13 {
		t.Fatalf("run_started: %+v", started)
	}
	// Another host: not fetched.
	if code, _ := g.post(cmd("7002", "http://169.254.169.254/latest/meta-data"), time.Now()); code != 200 {
		t.Fatal(code)
	}
	in := g.Inputs("dc:772908445358620702")
	if len(in) != 2 || !strings.Contains(in[1].Parts[0].Text, "shot.png (could not be downloaded: an attachment URL not of Discord's CDN") {
		t.Errorf("the second input: %+v", in)
	}
}
