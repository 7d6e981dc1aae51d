package telegram_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/channeltest"
	"github.com/agentrt/agentrt/channel/telegram"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

const (
	token  = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	secret = "wh-secret_1"
)

func newRig(t *testing.T, bind func(*channel.Binding), replies ...scripted.Reply) (*channeltest.Rig, *channeltest.TelegramAPI) {
	t.Helper()
	api := channeltest.NewTelegramAPI(t, token)
	ch, err := telegram.New(telegram.Config{BotToken: token, SecretToken: secret, APIURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	b := channel.Binding{Name: "tg", Channel: ch}
	if bind != nil {
		bind(&b)
	}
	return channeltest.New(t, b, replies...), api
}

var update = channeltest.TelegramUpdate

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A message with the webhook's secret is one input however often Telegram
// delivers it, shows "typing", and is answered with sendMessage in HTML;
// a wrong or missing secret is 401 and nothing is stored.
func TestMessage(t *testing.T) {
	g, api := newRig(t, nil, scripted.Reply{Text: "Hello **Ana** <3 & `x<y`"})
	for _, sec := range []string{"wrong", ""} {
		if code, _ := g.Post("webhook", update(1, 10, "hi"), telegram.SecretHeader, sec); code != http.StatusUnauthorized {
			t.Errorf("secret %q: %d, want 401", sec, code)
		}
	}
	if n := len(g.Inputs("tg:111111111")); n != 0 {
		t.Fatalf("refused updates stored %d inputs", n)
	}
	for range 2 {
		if code, body := g.Post("webhook", update(1, 10, "hi"), telegram.SecretHeader, secret); code != 200 {
			t.Fatalf("an update: %d %s", code, body)
		}
	}
	g.DeliverUntil("the answer", func() bool { return len(api.Of("sendMessage")) == 1 })
	got := api.Of("sendMessage")[0]
	if got["chat_id"] != 111111111.0 || got["parse_mode"] != "HTML" || got["text"] != "Hello <b>Ana</b> &lt;3 &amp; <code>x&lt;y</code>" {
		t.Errorf("sendMessage: %v", got)
	}
	if in := g.Inputs("tg:111111111"); len(in) != 1 || in[0].Key != "111111111:10" || in[0].Metadata["sender_name"] != "ana_k" {
		t.Errorf("the inputs: %+v", in)
	}
	if n := len(api.Of("sendChatAction")); n != 1 {
		t.Errorf("%d typing actions, want 1", n)
	}
	// An edit of a message (edited_message), a bot's own message: acknowledged, not stored.
	edited := `{"update_id":3,"edited_message":{"message_id":10,"from":{"id":111111111,"is_bot":false,"first_name":"Ana"},"chat":{"id":111111111,"type":"private"},"date":1700000001,"edit_date":1700000002,"text":"hi!"}}`
	if code, _ := g.Post("webhook", edited, telegram.SecretHeader, secret); code != 200 {
		t.Errorf("an edited message: %d", code)
	}
	if code, _ := g.Post("webhook", `{"update_id":`, telegram.SecretHeader, secret); code != 400 {
		t.Errorf("a malformed update: %d", code)
	}
}

// An approval is an inline keyboard; a press (a callback query) by an
// approver answers it once, stops the button's spinner, edits the message
// to say who approved, and the run's answer follows; a press by someone
// else changes nothing.
func TestApproval(t *testing.T) {
	g, api := newRig(t, func(b *channel.Binding) { b.Approvers = []string{"222"} },
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"})
	g.Post("webhook", update(1, 10, "deploy"), telegram.SecretHeader, secret)
	g.DeliverUntil("the question", func() bool { return len(api.Of("sendMessage")) == 1 })
	q := api.Of("sendMessage")[0]
	kb := q["reply_markup"].(map[string]any)["inline_keyboard"].([]any)[0].([]any)
	if len(kb) != 3 {
		t.Fatalf("the keyboard: %v", kb)
	}
	approve := kb[0].(map[string]any)["callback_data"].(string)
	if len(approve) > 64 {
		t.Errorf("callback_data of %d bytes: Telegram takes 64", len(approve))
	}
	press := func(id, from string) {
		// https://core.telegram.org/bots/api#callbackquery
		body := `{"update_id":5,"callback_query":{"id":` + quote(id) + `,"from":{"id":` + from + `,"is_bot":false,"first_name":"B"},` +
			`"message":{"message_id":1,"chat":{"id":111111111,"type":"private"},"date":1700000000,"text":"…"},"chat_instance":"42","data":` + quote(approve) + `}}`
		if code, _ := g.Post("webhook", body, telegram.SecretHeader, secret); code != 200 {
			t.Fatalf("a press: %d", code)
		}
	}
	press("cb1", "111111111")
	if len(g.Pending("tg:111111111")) != 1 {
		t.Fatal("a press by someone who may not approve answered the question")
	}
	press("cb2", "222")
	press("cb3", "222")
	g.DeliverUntil("the edit and the answer", func() bool { return len(api.Of("sendMessage")) == 2 && len(api.Of("editMessageText")) == 1 })
	if e := api.Of("editMessageText")[0]; e["message_id"] != 1.0 || !strings.Contains(e["text"].(string), "Approved by 222") || e["reply_markup"] != nil {
		t.Errorf("the edit: %v", e)
	}
	if a := api.Of("sendMessage")[1]; a["text"] != "deployed" {
		t.Errorf("the answer: %v", a)
	}
	g.Hub.Close()
	acks := api.Of("answerCallbackQuery")
	if len(acks) != 3 || acks[0]["text"] != "You may not decide this." {
		t.Errorf("the presses' answers: %v", acks)
	}
}

// 429 with parameters.retry_after: tried again after it, not before.
func TestRetryAfter(t *testing.T) {
	g, api := newRig(t, nil, scripted.Reply{Text: "hi"})
	var tries int
	api.Fail = func(method string, n int) string {
		if method != "sendMessage" {
			return ""
		}
		tries++
		if tries == 1 {
			return `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}`
		}
		return ""
	}
	g.Post("webhook", update(1, 10, "hi"), telegram.SecretHeader, secret)
	g.DeliverUntil("the 429", func() bool {
		items := g.Outbox("tg:111111111")
		return len(items) == 1 && items[0].Error != ""
	})
	g.Skew.Store(int64(6_000_000_000))
	g.Hub.DeliverDue(channeltest.Ctx())
	if n := len(api.Of("sendMessage")); n != 0 {
		t.Fatalf("sent before retry_after: %d", n)
	}
	g.Skew.Store(int64(8_000_000_000))
	g.DeliverUntil("the answer", func() bool { return len(api.Of("sendMessage")) == 1 })
}

// Markdown becomes the HTML Telegram takes, everything else escaped.
func TestHTML(t *testing.T) {
	for in, want := range map[string]string{
		"a < b & c > d":                    "a &lt; b &amp; c &gt; d",
		"**bold** and *it* and _it_":       "<b>bold</b> and <i>it</i> and <i>it</i>",
		"`a<b>` then ```go\nx := <-c\n```": "<code>a&lt;b&gt;</code> then <pre>x := &lt;-c\n</pre>",
		"[docs](https://x.dev/a?b=1&c=2)":  `<a href="https://x.dev/a?b=1&amp;c=2">docs</a>`,
		"<script>alert(1)</script>":        "&lt;script&gt;alert(1)&lt;/script&gt;",
		"2 * 3 * 4":                        "2 * 3 * 4",
	} {
		if got := telegram.HTML(in); got != want {
			t.Errorf("HTML(%q) = %q, want %q", in, got, want)
		}
	}
}

// Three messages a person sends within the debounce are one turn, which
// reads them all, and one answer.
func TestBurstIsOneTurn(t *testing.T) {
	api := channeltest.NewTelegramAPI(t, token)
	ch, err := telegram.New(telegram.Config{BotToken: token, SecretToken: secret, APIURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	g := channeltest.NewWith(t, channel.Binding{Name: "tg", Channel: ch}, gateway.Config{Debounce: time.Second},
		scripted.Reply{Text: "refund for order 43 on its way", Expect: &scripted.Expect{LastUserContains: "sorry, 43"}})
	for i, text := range []string{"hi, I need a refund", "order 42", "sorry, 43"} {
		if code, _ := g.Post("webhook", update(i+1, 10+i, text), telegram.SecretHeader, secret); code != 200 {
			t.Fatal(code)
		}
	}
	g.DeliverUntil("the answer", func() bool { return len(api.Of("sendMessage")) == 1 })
	if got := api.Of("sendMessage")[0]["text"]; got != "refund for order 43 on its way" {
		t.Errorf("the answer: %v", got)
	}
	var turns int
	for ev, err := range g.Store.Events(channeltest.Ctx(), "tg:111111111", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeRunStarted {
			turns++
			if in := ev.Data.(*session.RunStarted).Input; !strings.Contains(in, "order 42") || !strings.Contains(in, "refund") {
				t.Errorf("the turn's input: %q", in)
			}
		}
	}
	if turns != 1 {
		t.Errorf("%d turns, want 1", turns)
	}
}

// A photo with a caption reaches the turn: the photo downloaded with the
// bot's token (getFile, then the file URL), kept as a blob and named in
// run_started; a file larger than the hub takes is named in the text
// instead, and not downloaded.
func TestPhoto(t *testing.T) {
	api := channeltest.NewTelegramAPI(t, token)
	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, []byte("a small photo")...)
	api.Files = map[string][]byte{"AgACAgQAAxkBAAIB": jpeg}
	ch, err := telegram.New(telegram.Config{BotToken: token, SecretToken: secret, APIURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	g := channeltest.New(t, channel.Binding{Name: "tg", Channel: ch}, scripted.Reply{Text: "a nice photo"})
	// https://core.telegram.org/bots/api#message: photo is the sizes,
	// the largest last; document a file.
	body := `{"update_id":7,"message":{"message_id":20,"from":{"id":111111111,"is_bot":false,"first_name":"Ana"},` +
		`"chat":{"id":111111111,"type":"private"},"date":1700000000,"caption":"what is this?",` +
		`"photo":[{"file_id":"small","file_unique_id":"s","width":90,"height":60,"file_size":900},` +
		`{"file_id":"AgACAgQAAxkBAAIB","file_unique_id":"b","width":1280,"height":853,"file_size":17}],` +
		`"document":{"file_id":"huge","file_unique_id":"h","file_name":"scan.pdf","mime_type":"application/pdf","file_size":31457280}}}`
	if code, _ := g.Post("webhook", body, telegram.SecretHeader, secret); code != 200 {
		t.Fatal(code)
	}
	g.DeliverUntil("the answer", func() bool { return len(api.Of("sendMessage")) == 1 })
	started := g.RunStarted("tg:111111111")
	if started == nil || len(started.Media) != 1 || started.Media[0].Type != "image/jpeg" || started.Media[0].Size != int64(len(jpeg)) {
		t.Fatalf("the turn's media: %+v", started)
	}
	if !strings.Contains(started.Input, "what is this?") || !strings.Contains(started.Input, "scan.pdf (31457280 bytes: more than the") {
		t.Errorf("the turn's text: %q", started.Input)
	}
	if _, data, err := g.Store.GetBlob(channeltest.Ctx(), started.Media[0].Hash); err != nil || string(data) != string(jpeg) {
		t.Errorf("the photo's blob: %q %v", data, err)
	}
}

// The agent's question in words (ask_user) is answered by the person's
// next message: the run goes on with it as the call's result, and the
// message is marked answered in the answer's commit — so Telegram's
// delivery of the same update again (after a crash between the answer and
// the 2xx, or any retry) is the same input, answering nothing twice and
// starting no turn of its own.
func TestPromptAnsweredByMessage(t *testing.T) {
	g, api := newRig(t, nil,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"Which order?"}`)}},
		scripted.Reply{Text: "Refunding order 43.", Expect: &scripted.Expect{LastToolResultContains: "sorry, 43"}})
	g.Post("webhook", update(1, 10, "I need a refund"), telegram.SecretHeader, secret)
	g.DeliverUntil("the question", func() bool { return len(api.Of("sendMessage")) == 1 })
	if q := api.Of("sendMessage")[0]; !strings.Contains(q["text"].(string), "Which order?") {
		t.Fatalf("the question: %v", q)
	}
	for range 3 {
		if code, body := g.Post("webhook", update(2, 11, "sorry, 43"), telegram.SecretHeader, secret); code != 200 {
			t.Fatalf("the answer: %d %s", code, body)
		}
	}
	g.DeliverUntil("the run's answer", func() bool { return len(api.Of("sendMessage")) == 2 })
	if a := api.Of("sendMessage")[1]; a["text"] != "Refunding order 43." {
		t.Errorf("the answer: %v", a)
	}
	in := g.Inputs("tg:111111111")
	if len(in) != 2 || in[1].Key != "111111111:11" || in[1].State != session.InputAnswered {
		t.Fatalf("the inputs: %+v", in)
	}
	var resolved *session.InputResolved
	starts := 0
	for ev, err := range g.Store.Events(channeltest.Ctx(), "tg:111111111", 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.InputResolved:
			resolved = d
		case *session.RunStarted:
			starts++
		}
	}
	if resolved == nil || resolved.Text != "sorry, 43" || len(resolved.Inputs) != 1 || resolved.Inputs[0] != in[1].ID || !strings.Contains(resolved.By, "ana_k") {
		t.Errorf("the answer recorded: %+v", resolved)
	}
	if starts != 1 {
		t.Errorf("%d runs started, want 1: the answer continued the first", starts)
	}
	// Delivered once more, after all that: still nothing new.
	g.Post("webhook", update(2, 11, "sorry, 43"), telegram.SecretHeader, secret)
	if in := g.Inputs("tg:111111111"); len(in) != 2 {
		t.Errorf("a late retry stored an input: %+v", in)
	}
}

// gated is a model that streams its answer in pieces, each when the test
// lets it (next).
type gated struct {
	pieces []string
	next   chan struct{}
}

func (m *gated) Name() string { return "gated" }

func (m *gated) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for i, p := range m.pieces {
			select {
			case <-m.next:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
			c := model.Chunk{Text: p}
			if i == len(m.pieces)-1 {
				c.FinishReason = model.FinishStop
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// With stream on, the answer appears as it is written: posted once text
// comes, edited as more does, and its delivery edits that message into
// the answer rather than posting another; "typing" shows until then, again
// and again while the model is slow.
func TestStreamedAnswer(t *testing.T) {
	api := channeltest.NewTelegramAPI(t, token)
	ch, err := telegram.New(telegram.Config{BotToken: token, SecretToken: secret, APIURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := &gated{pieces: []string{"Your order", " 43 is on", " its way."}, next: make(chan struct{})}
	g := channeltest.NewModel(t, nil, channel.Binding{Name: "tg", Channel: ch, Stream: true, StreamEvery: time.Nanosecond},
		gateway.Config{}, m, func(c *channel.Config) { c.TypingEvery = 5 * time.Millisecond })
	if code, _ := g.Post("webhook", update(1, 10, "where is my order?"), telegram.SecretHeader, secret); code != 200 {
		t.Fatal(code)
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen", what)
			}
			time.Sleep(2 * time.Millisecond) // polls the fake platform's calls
		}
	}
	wait("typing shown again while the model says nothing", func() bool { return len(api.Of("sendChatAction")) >= 3 })
	m.next <- struct{}{}
	wait("the draft", func() bool { return len(api.Of("sendMessage")) == 1 })
	if d := api.Of("sendMessage")[0]; d["text"] != "Your order …" {
		t.Errorf("the draft: %v", d)
	}
	typing := len(api.Of("sendChatAction"))
	m.next <- struct{}{}
	wait("the draft edited", func() bool { return len(api.Of("editMessageText")) == 1 })
	if e := api.Of("editMessageText")[0]; e["text"] != "Your order 43 is on …" || e["message_id"] != 1.0 {
		t.Errorf("the edit: %v", e)
	}
	m.next <- struct{}{}
	g.DeliverUntil("the answer", func() bool {
		items := g.Outbox("tg:111111111")
		return len(items) == 1 && items[0].State == session.OutboxSent
	})
	edits := api.Of("editMessageText")
	if e := edits[len(edits)-1]; e["text"] != "Your order 43 is on its way." || e["message_id"] != 1.0 {
		t.Errorf("the answer's edit: %v", e)
	}
	if n := len(api.Of("sendMessage")); n != 1 {
		t.Errorf("%d messages sent, want the draft alone", n)
	}
	if items := g.Outbox("tg:111111111"); len(items) != 1 || items[0].State != session.OutboxSent || items[0].Ref != "1" {
		t.Errorf("the outbox: %+v", items)
	}
	g.Hub.Close()
	if n := len(api.Of("sendChatAction")); n > typing+1 { // one may have been on its way
		t.Errorf("typing shown %d times after the draft was posted", n-typing)
	}
}
