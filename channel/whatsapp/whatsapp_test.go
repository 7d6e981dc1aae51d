package whatsapp_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/channeltest"
	"github.com/agentrt/agentrt/channel/whatsapp"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

const (
	appSecret = "app-secret-1"
	verify    = "verify-me"
	phoneID   = "106540352242922"
)

// graphAPI is a fake Graph API: POST /PHONE_NUMBER_ID/messages as the
// Cloud API documents it (https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages),
// keeping the messages.
type graphAPI struct {
	t    *testing.T
	mu   sync.Mutex
	sent []map[string]any
}

func (g *graphAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "GET" && r.Header.Get("Authorization") == "Bearer token" {
		// https://developers.facebook.com/docs/whatsapp/cloud-api/reference/media:
		// a media id gives its URL, whose bytes need the token too.
		switch r.URL.Path {
		case "/v21.0/1037543291543636":
			_ = json.NewEncoder(w).Encode(map[string]any{"messaging_product": "whatsapp", "url": "http://" + r.Host + "/media/1037543291543636",
				"mime_type": "image/jpeg", "sha256": "x", "file_size": 9, "id": "1037543291543636"})
			return
		case "/media/1037543291543636":
			_, _ = io.WriteString(w, "\xff\xd8\xffphoto")
			return
		}
	}
	if r.URL.Path != "/v21.0/"+phoneID+"/messages" || r.Header.Get("Authorization") != "Bearer token" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}`)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		g.t.Errorf("a body that is not JSON: %v", err)
	}
	g.mu.Lock()
	g.sent = append(g.sent, req)
	n := len(g.sent)
	g.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"messaging_product": "whatsapp",
		"contacts": []any{map[string]string{"input": req["to"].(string), "wa_id": req["to"].(string)}},
		"messages": []any{map[string]string{"id": "wamid.OUT" + strings.Repeat("x", n)}}})
}

func (g *graphAPI) all() []map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]map[string]any(nil), g.sent...)
}

func newRig(t *testing.T, gc gateway.Config, replies ...scripted.Reply) (*channeltest.Rig, *graphAPI) {
	t.Helper()
	api := &graphAPI{t: t}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ch, err := whatsapp.New(whatsapp.Config{AccessToken: "token", AppSecret: appSecret, VerifyToken: verify, PhoneNumberID: phoneID, APIURL: srv.URL + "/v21.0"})
	if err != nil {
		t.Fatal(err)
	}
	return channeltest.NewWith(t, channel.Binding{Name: "wa", Channel: ch}, gc, replies...), api
}

func signed(body string) []string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(body))
	return []string{"X-Hub-Signature-256", "sha256=" + hex.EncodeToString(m.Sum(nil)), "Content-Type", "application/json"}
}

// notification is a webhook notification of text messages from one
// person, as the Cloud API's documentation shows one
// (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples),
// with a delivery status beside them.
func notification(texts ...string) string {
	var msgs []string
	for i, t := range texts {
		msgs = append(msgs, `{"from":"16315551234","id":"wamid.ABGGFlCGg0cvAgo-sJQh43L5Pe4W`+string(rune('A'+i))+`","timestamp":"1603059201","text":{"body":`+quote(t)+`},"type":"text"}`)
	}
	return `{"object":"whatsapp_business_account","entry":[{"id":"WHATSAPP_BUSINESS_ACCOUNT_ID","changes":[{"value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"15550001111","phone_number_id":"` + phoneID + `"},` +
		`"contacts":[{"profile":{"name":"Kerry Fisher"},"wa_id":"16315551234"}],"messages":[` + strings.Join(msgs, ",") + `],` +
		`"statuses":[{"id":"wamid.OLD","status":"delivered","timestamp":"1603059202","recipient_id":"16315551234"}]},"field":"messages"}]}]}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// The verification request is answered with its challenge when its verify
// token matches, refused when not; a notification's signature is checked.
func TestVerification(t *testing.T) {
	g, _ := newRig(t, gateway.Config{})
	get := func(q string) (int, string) {
		res, err := http.Get(g.Server.URL + "/v1/channels/wa/webhook?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("hub.mode=subscribe&hub.verify_token=" + verify + "&hub.challenge=1158201444"); code != 200 || body != "1158201444" {
		t.Errorf("the verification: %d %q", code, body)
	}
	if code, _ := get("hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1"); code != 401 {
		t.Errorf("a wrong verify token: %d", code)
	}
	body := notification("hi")
	bad := signed(body)
	bad[1] = "sha256=" + strings.Repeat("0", 64)
	if code, _ := g.Post("webhook", body, bad...); code != 401 {
		t.Errorf("a wrong signature: %d", code)
	}
	if code, _ := g.Post("webhook", body, "Content-Type", "application/json"); code != 401 {
		t.Errorf("no signature: %d", code)
	}
	if in := g.Inputs("wa:16315551234"); len(in) != 0 {
		t.Errorf("refused notifications stored %+v", in)
	}
}

// A batch of three messages from one person within the debounce is one
// turn, and one answer; the status beside them is ignored.
func TestBatchIsOneTurn(t *testing.T) {
	g, api := newRig(t, gateway.Config{Debounce: time.Second},
		scripted.Reply{Text: "**Refund** for order 43", Expect: &scripted.Expect{LastUserContains: "sorry, 43"}})
	body := notification("hi, I need a refund", "order 42", "sorry, 43")
	for range 2 { // and Meta sends it again
		if code, _ := g.Post("webhook", body, signed(body)...); code != 200 {
			t.Fatalf("the notification: %d", code)
		}
	}
	g.DeliverUntil("the answer", func() bool { return len(api.all()) == 1 })
	got := api.all()[0]
	if got["to"] != "16315551234" || got["type"] != "text" || got["text"].(map[string]any)["body"] != "*Refund* for order 43" {
		t.Errorf("the answer: %v", got)
	}
	var turns int
	for ev, err := range g.Store.Events(channeltest.Ctx(), "wa:16315551234", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeRunStarted {
			turns++
		}
	}
	if in := g.Inputs("wa:16315551234"); turns != 1 || len(in) != 3 || in[0].Metadata["sender_name"] != "Kerry Fisher" {
		t.Errorf("%d turns of %d inputs (%+v), want 1 of 3", turns, len(in), in)
	}
	if c := g.Hub.Counts(); c.Ignored != 2 || c.Duplicates != 3 {
		t.Errorf("counts: %+v", c)
	}
}

// An approval is an interactive message with reply buttons; the person's
// press comes back as an interactive message, and the run goes on.
func TestApprovalButtons(t *testing.T) {
	g, api := newRig(t, gateway.Config{},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"})
	body := notification("deploy")
	g.Post("webhook", body, signed(body)...)
	g.DeliverUntil("the question", func() bool { return len(api.all()) == 1 })
	q := api.all()[0]
	if q["type"] != "interactive" {
		t.Fatalf("the question: %v", q)
	}
	buttons := q["interactive"].(map[string]any)["action"].(map[string]any)["buttons"].([]any)
	approve := buttons[0].(map[string]any)["reply"].(map[string]any)["id"].(string)
	press := `{"object":"whatsapp_business_account","entry":[{"id":"W","changes":[{"value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"15550001111","phone_number_id":"` + phoneID + `"},"contacts":[{"profile":{"name":"Kerry Fisher"},"wa_id":"16315551234"}],` +
		`"messages":[{"context":{"from":"15550001111","id":"wamid.OUTx"},"from":"16315551234","id":"wamid.PRESS1","timestamp":"1603059205","type":"interactive",` +
		`"interactive":{"type":"button_reply","button_reply":{"id":` + quote(approve) + `,"title":"Approve"}}}]},"field":"messages"}]}]}`
	if code, _ := g.Post("webhook", press, signed(press)...); code != 200 {
		t.Fatalf("the press: %d", code)
	}
	g.DeliverUntil("the answer", func() bool { return len(api.all()) == 2 })
	if a := api.all()[1]; a["text"].(map[string]any)["body"] != "deployed" {
		t.Errorf("the answer: %v", a)
	}
}

// An image message (its caption the text) is downloaded through the
// media's URL with the access token, and reaches the turn as media.
func TestImage(t *testing.T) {
	g, api := newRig(t, gateway.Config{}, scripted.Reply{Text: "a photo"})
	body := `{"object":"whatsapp_business_account","entry":[{"id":"W","changes":[{"value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"15550001111","phone_number_id":"` + phoneID + `"},"contacts":[{"profile":{"name":"Kerry Fisher"},"wa_id":"16315551234"}],` +
		`"messages":[{"from":"16315551234","id":"wamid.IMG1","timestamp":"1603059201","type":"image",` +
		`"image":{"caption":"what is this?","mime_type":"image/jpeg","sha256":"x","id":"1037543291543636"}}]},"field":"messages"}]}]}`
	if code, _ := g.Post("webhook", body, signed(body)...); code != 200 {
		t.Fatal(code)
	}
	g.DeliverUntil("the answer", func() bool { return len(api.all()) == 1 })
	if d := g.RunStarted("wa:16315551234"); d == nil || len(d.Media) != 1 || d.Media[0].Type != "image/jpeg" || d.Media[0].Size != 8 || d.Input != "what is this?" {
		t.Errorf("run_started: %+v", d)
	}
}
