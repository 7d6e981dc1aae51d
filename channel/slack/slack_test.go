package slack_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/channeltest"
	"github.com/agentrt/agentrt/channel/slack"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// webAPI is a fake Slack Web API: chat.postMessage and chat.update as
// https://api.slack.com/methods documents them (form posts, answers with
// ok, channel and ts); fail, when set, may answer 429 instead.
type webAPI struct {
	t     *testing.T
	mu    sync.Mutex
	calls []call
	next  int
	fail  func(method string) (retryAfter string)
	url   string // the server's
	// hold, when set, holds each file download until it is closed.
	hold chan struct{}
}

type call struct {
	Method string
	Form   url.Values
}

func (a *webAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/files-pri/") {
		// A file's url_private_download: the bot's token as a bearer.
		if r.Header.Get("Authorization") != "Bearer xoxb-test" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if a.hold != nil {
			select {
			case <-a.hold:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = io.WriteString(w, "\x89PNG-a-screenshot")
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		a.t.Errorf("%s: %v", method, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Form.Get("token") != "xoxb-test" && r.Header.Get("Authorization") != "Bearer xoxb-test" {
		_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	if a.fail != nil {
		if ra := a.fail(method); ra != "" {
			w.Header().Set("Retry-After", ra)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
	}
	a.calls = append(a.calls, call{method, r.Form})
	switch method {
	case "chat.postMessage":
		a.next++
		ts := "1700000000.00" + strconv.Itoa(1000+a.next)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": ts, "message": map[string]any{"text": r.Form.Get("text"), "ts": ts}})
	case "chat.update":
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": r.Form.Get("ts"), "text": r.Form.Get("text")})
	default:
		_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (a *webAPI) of(method string) []url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []url.Values
	for _, c := range a.calls {
		if c.Method == method {
			out = append(out, c.Form)
		}
	}
	return out
}

func newRig(t *testing.T, bind func(*channel.Binding), replies ...scripted.Reply) (*channeltest.Rig, *webAPI) {
	t.Helper()
	api := &webAPI{t: t}
	srv := httptest.NewServer(api)
	api.url = srv.URL
	t.Cleanup(srv.Close)
	ch, err := slack.New(slack.Config{BotToken: "xoxb-test", SigningSecret: signingSecret, APIURL: srv.URL + "/api"})
	if err != nil {
		t.Fatal(err)
	}
	b := channel.Binding{Name: "sl", Channel: ch}
	if bind != nil {
		bind(&b)
	}
	return channeltest.New(t, b, replies...), api
}

// sign is Slack's v0 signature of body at t
// (https://api.slack.com/authentication/verifying-requests-from-slack).
func sign(t time.Time, body string) []string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(signingSecret))
	m.Write([]byte("v0:" + ts + ":" + body))
	return []string{"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0=" + hex.EncodeToString(m.Sum(nil)), "Content-Type", "application/json"}
}

// event is an event_callback with a message, as the Events API's
// documentation shows one (https://api.slack.com/events/message).
func event(eventID, ts, threadTS, text string) string {
	thread := ""
	if threadTS != "" {
		thread = `,"thread_ts":"` + threadTS + `"`
	}
	return `{"token":"XXYYZZ","team_id":"T061EG9R6","api_app_id":"A0PNCHHK2","event":{"type":"message","channel":"C2147483705",` +
		`"user":"U2147483697","text":` + strconv.Quote(text) + `,"ts":"` + ts + `"` + thread + `,"channel_type":"channel","event_ts":"` + ts + `"},` +
		`"type":"event_callback","authed_users":["U0AB12C3D"],"event_id":"` + eventID + `","event_time":1355517523}`
}

// The Events API: url_verification is answered with its challenge; a
// signed message is one input whatever Slack retries, and is answered in
// its thread; a bad or stale signature is 401; the bot's own messages are
// ignored.
func TestEvents(t *testing.T) {
	g, api := newRig(t, nil, scripted.Reply{Text: "**Hi** <there> & [docs](https://x.dev)"})
	challenge := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	if code, body := g.Post("events", challenge, sign(time.Now(), challenge)...); code != 200 || body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("url_verification: %d %q", code, body)
	}
	ev := event("Ev08MFMKH6", "1355517523.000005", "", "hello")
	if code, _ := g.Post("events", ev, sign(time.Now().Add(-6*time.Minute), ev)...); code != 401 {
		t.Errorf("a stale signature: %d", code)
	}
	bad := sign(time.Now(), ev)
	bad[3] = "v0=" + strings.Repeat("0", 64)
	if code, _ := g.Post("events", ev, bad...); code != 401 {
		t.Errorf("a wrong signature: %d", code)
	}
	for i := range 3 {
		hdr := sign(time.Now(), ev)
		if i > 0 {
			hdr = append(hdr, "X-Slack-Retry-Num", strconv.Itoa(i), "X-Slack-Retry-Reason", "http_timeout")
		}
		if code, _ := g.Post("events", ev, hdr...); code != 200 {
			t.Fatalf("a message: %d", code)
		}
	}
	source := "sl:C2147483705:1355517523.000005"
	if in := g.Inputs(source); len(in) != 1 || in[0].Key != "C2147483705:1355517523.000005" {
		t.Fatalf("the inputs: %+v", in)
	}
	g.DeliverUntil("the answer", func() bool { return len(api.of("chat.postMessage")) == 1 })
	got := api.of("chat.postMessage")[0]
	if got.Get("channel") != "C2147483705" || got.Get("thread_ts") != "1355517523.000005" || got.Get("text") != "*Hi* &lt;there&gt; &amp; <https://x.dev|docs>" {
		t.Errorf("chat.postMessage: %v", got)
	}
	bot := `{"type":"event_callback","event_id":"Ev2","event":{"type":"message","subtype":"bot_message","bot_id":"B1","channel":"C2147483705","text":"hi","ts":"1355517524.000001"}}`
	if code, _ := g.Post("events", bot, sign(time.Now(), bot)...); code != 200 {
		t.Errorf("the bot's own message: %d", code)
	}
	if code, _ := g.Post("events", `{"type":`, sign(time.Now(), `{"type":`)...); code != 400 {
		t.Errorf("a malformed event: %d", code)
	}
	if c := g.Hub.Counts(); c.Duplicates != 2 || c.Ignored != 1 {
		t.Errorf("counts: %+v", c)
	}
}

// An approval is Block Kit buttons; the press (a block_actions payload,
// form data) by an approver answers it and the message is updated with
// chat.update; a 429 of chat.postMessage waits for its Retry-After.
func TestApprovalAndRateLimit(t *testing.T) {
	g, api := newRig(t, func(b *channel.Binding) { b.Approvers = []string{"U0BOSS"} },
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"})
	ev := event("Ev1", "1700000000.000100", "", "deploy")
	g.Post("events", ev, sign(time.Now(), ev)...)
	g.DeliverUntil("the question", func() bool { return len(api.of("chat.postMessage")) == 1 })
	q := api.of("chat.postMessage")[0]
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(q.Get("blocks")), &blocks); err != nil || len(blocks) != 2 {
		t.Fatalf("the question's blocks: %s %v", q.Get("blocks"), err)
	}
	els := blocks[1]["elements"].([]any)
	approve := els[0].(map[string]any)["value"].(string)
	// https://api.slack.com/reference/interaction-payloads/block-actions
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "13345224609.738474920.8088930838d88f008e0",
		"user":         map[string]any{"id": "U0BOSS", "username": "boss"},
		"channel":      map[string]any{"id": "C2147483705", "name": "general"},
		"container":    map[string]any{"type": "message", "message_ts": "1700000000.001001", "channel_id": "C2147483705"},
		"message":      map[string]any{"ts": "1700000000.001001", "thread_ts": "1700000000.000100", "text": "…"},
		"response_url": "https://hooks.slack.com/actions/T/1/x",
		"actions":      []any{map[string]any{"action_id": "agentrt_0", "block_id": "agentrt_actions", "type": "button", "value": approve, "action_ts": "1548426417.840180"}},
	})
	form := "payload=" + url.QueryEscape(string(payload))
	hdr := sign(time.Now(), form)
	hdr[5] = "application/x-www-form-urlencoded"
	var tries int
	api.mu.Lock()
	api.fail = func(method string) string {
		if method == "chat.postMessage" {
			if tries++; tries == 1 {
				return "20"
			}
		}
		return ""
	}
	api.mu.Unlock()
	if code, _ := g.Post("events", form, hdr...); code != 200 {
		t.Fatalf("the press: %d", code)
	}
	g.DeliverUntil("the update", func() bool { return len(api.of("chat.update")) == 1 })
	if u := api.of("chat.update")[0]; u.Get("ts") != "1700000000.001001" || !strings.Contains(u.Get("text"), "Approved by U0BOSS") {
		t.Errorf("chat.update: %v", u)
	}
	g.DeliverUntil("the 429", func() bool {
		items := g.Outbox("sl:C2147483705:1700000000.000100")
		return len(items) == 3 && strings.Contains(items[2].Error, "429")
	})
	g.Hub.DeliverDue(channeltest.Ctx())
	if n := len(api.of("chat.postMessage")); n != 1 {
		t.Fatalf("posted before Retry-After: %d", n)
	}
	g.Skew.Store(int64(21 * time.Second))
	g.DeliverUntil("the answer", func() bool { return len(api.of("chat.postMessage")) == 2 })
	if a := api.of("chat.postMessage")[1]; a.Get("text") != "deployed" || a.Get("thread_ts") != "1700000000.000100" {
		t.Errorf("the answer: %v", a)
	}
}

func TestMrkdwn(t *testing.T) {
	for in, want := range map[string]string{
		"# Title\nbody":             "*Title*\nbody",
		"a < b && c > d":            "a &lt; b &amp;&amp; c &gt; d",
		"`x<y` and ```\n<b>\n```":   "`x&lt;y` and ```&lt;b&gt;\n```",
		"**bold** [t](https://a.b)": "*bold* <https://a.b|t>",
	} {
		if got := slack.Mrkdwn(in); got != want {
			t.Errorf("Mrkdwn(%q) = %q, want %q", in, got, want)
		}
	}
}

// A file a person shares with a message (subtype file_share) is
// downloaded with the bot's token and reaches the turn as media.
func TestSharedFile(t *testing.T) {
	g, api := newRig(t, nil, scripted.Reply{Text: "nice screenshot"})
	// https://api.slack.com/events/message/file_share
	ev := `{"type":"event_callback","event_id":"EvF1","event":{"type":"message","subtype":"file_share","channel":"C2147483705",` +
		`"user":"U2147483697","text":"look","ts":"1700000100.000100","channel_type":"channel",` +
		`"files":[{"id":"F1","name":"shot.png","mimetype":"image/png","filetype":"png","size":17,` +
		`"url_private_download":"` + api.url + `/files-pri/T1-F1/download/shot.png"}]}}`
	if code, _ := g.Post("events", ev, sign(time.Now(), ev)...); code != 200 {
		t.Fatal(code)
	}
	g.DeliverUntil("the answer", func() bool { return len(api.of("chat.postMessage")) == 1 })
	if d := g.RunStarted("sl:C2147483705:1700000100.000100"); d == nil || len(d.Media) != 1 || d.Media[0].Name != "shot.png" || d.Media[0].Size != 17 || d.Input != "look" {
		t.Errorf("run_started: %+v", d)
	}
}

// A file that takes longer to download than Slack waits for an answer (3
// s; here 300 ms) does not hold the answer: the message is stored, and
// answered 200, saying the file follows; the file, downloaded after,
// is an input of its own (the message's key and "#files": Slack's retry
// of the event stores it once), which reaches a turn as media.
func TestSlowFileFollows(t *testing.T) {
	g, api := newRig(t, func(b *channel.Binding) { b.AckWithin = 300 * time.Millisecond },
		scripted.Reply{Text: "I see a screenshot coming"}, scripted.Reply{Text: "nice screenshot"})
	api.hold = make(chan struct{})
	ev := `{"type":"event_callback","event_id":"EvF2","event":{"type":"message","subtype":"file_share","channel":"C2147483705",` +
		`"user":"U2147483697","text":"look","ts":"1700000200.000100","channel_type":"channel",` +
		`"files":[{"id":"F2","name":"shot.png","mimetype":"image/png","filetype":"png","size":17,` +
		`"url_private_download":"` + api.url + `/files-pri/T1-F2/download/shot.png"}]}}`
	if code, _ := g.Post("events", ev, sign(time.Now(), ev)...); code != 200 {
		t.Fatal(code)
	}
	// Answered with the download still held: the message is stored.
	const source = "sl:C2147483705:1700000200.000100"
	in := g.Inputs(source)
	if len(in) != 1 || !strings.Contains(in[0].Parts[0].Text, "shot.png: still downloading; it follows.") {
		t.Fatalf("the message stored: %+v", in)
	}
	// Slack's retry, while the file is still held: the same message.
	retry := sign(time.Now(), ev)
	if code, _ := g.Post("events", ev, append(retry, "X-Slack-Retry-Num", "1", "X-Slack-Retry-Reason", "http_timeout")...); code != 200 {
		t.Fatal(code)
	}
	close(api.hold)
	g.DeliverUntil("the file's input", func() bool { return len(g.Inputs(source)) == 2 })
	g.Hub.Close() // the downloads after the answers are done
	in = g.Inputs(source)
	if len(in) != 2 || in[1].Key != in[0].Key+"#files" || len(in[1].Parts) != 1 || in[1].Parts[0].Type != "media" {
		t.Fatalf("the inputs: %+v", in)
	}
	g.DeliverUntil("the file reaching a turn", func() bool {
		for ev, err := range g.Store.Events(channeltest.Ctx(), source, 0) {
			if d, ok := ev.Data.(*session.RunStarted); err == nil && ok && len(d.Media) == 1 && d.Media[0].Name == "shot.png" {
				return true
			}
		}
		return false
	})
}
