package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/channeltest"
	"github.com/agentrt/agentrt/channel/webhook"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

const secret = "s3cret"

// receiver is the system at the reply URL: it checks each post's
// signature and keeps it; fail, when set, answers instead.
type receiver struct {
	t    *testing.T
	mu   sync.Mutex
	got  []received
	fail func(n int) (status int, retryAfter string)
}

type received struct {
	Reply webhook.Reply
	Key   string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now()); err != nil {
		rc.t.Errorf("a reply's signature: %v", err)
	}
	var rep webhook.Reply
	if err := json.Unmarshal(body, &rep); err != nil {
		rc.t.Errorf("a reply that is not JSON: %s", body)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.fail != nil && rep.Type != "typing" {
		if status, ra := rc.fail(len(rc.got)); status != 0 {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(status)
			return
		}
	}
	rc.got = append(rc.got, received{rep, r.Header.Get("Idempotency-Key")})
	_ = json.NewEncoder(w).Encode(map[string]string{"id": "msg-" + r.Header.Get("Idempotency-Key")})
}

func (rc *receiver) messages() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []received
	for _, g := range rc.got {
		if g.Reply.Type != "typing" {
			out = append(out, g)
		}
	}
	return out
}

type rig struct {
	*channeltest.Rig
	rc *receiver
}

// newRig runs a hub with one webhook channel, "hook", whose agent's model
// says replies in order.
func newRig(t *testing.T, b func(*channel.Binding), replies ...scripted.Reply) *rig {
	t.Helper()
	rc := &receiver{t: t}
	out := httptest.NewServer(rc)
	t.Cleanup(out.Close)
	ch, err := webhook.New(webhook.Config{Secret: secret, ReplyURL: out.URL})
	if err != nil {
		t.Fatal(err)
	}
	bind := channel.Binding{Name: "hook", Channel: ch}
	if b != nil {
		b(&bind)
	}
	return &rig{channeltest.New(t, bind, replies...), rc}
}

// post signs and posts body to the channel's URL at time at.
func (g *rig) post(body string, at time.Time, sig ...string) int {
	g.T.Helper()
	s := webhook.Sign(secret, at, []byte(body))
	if len(sig) > 0 {
		s = sig[0]
	}
	code, _ := g.Post("events", body, webhook.SignatureHeader, s)
	return code
}

func msg(id, sender, text string) string {
	b, _ := json.Marshal(webhook.Event{Type: "message", ID: id, Sender: sender, Conversation: "c1", Text: text})
	return string(b)
}

// A signed message is one input however often the system sends it, and
// gets one answer, signed, with its outbox item's key.
func TestMessageAnswered(t *testing.T) {
	g := newRig(t, nil, scripted.Reply{Text: "hello **Ana**"})
	for range 3 {
		if code := g.post(msg("m1", "ana", "hi"), time.Now()); code != 200 {
			t.Fatalf("a signed message: %d", code)
		}
	}
	g.DeliverUntil("the answer", func() bool { return len(g.rc.messages()) == 1 })
	got := g.rc.messages()[0]
	if got.Reply.Type != "message" || got.Reply.Conversation != "c1" || got.Reply.Text != "hello **Ana**" || got.Key == "" {
		t.Errorf("the answer: %+v", got)
	}
	inputs, err := g.Store.Inputs(channeltest.Ctx(), "hook:c1", 0, 0)
	if err != nil || len(inputs) != 1 || inputs[0].Key != "m1" {
		t.Errorf("the inbox: %+v %v, want one input of key m1", inputs, err)
	}
	// Delivered once: nothing is owed any more.
	g.Hub.DeliverDue(context.Background())
	if n := len(g.rc.messages()); n != 1 {
		t.Errorf("%d answers", n)
	}
	if c := g.Hub.Counts(); c.Duplicates != 2 || c.Delivered != 1 {
		t.Errorf("counts: %+v", c)
	}
}

// Bad input is refused before anything is stored: a wrong or missing
// signature, a stale time (a replay), a malformed body; an unknown event
// type is acknowledged and ignored.
func TestRefused(t *testing.T) {
	g := newRig(t, nil)
	body := msg("m1", "ana", "hi")
	for _, tc := range []struct {
		name string
		at   time.Time
		sig  []string
		body string
		want int
	}{
		{"wrong secret", time.Now(), []string{webhook.Sign("other", time.Now(), []byte(body))}, body, 401},
		{"no signature", time.Now(), []string{""}, body, 401},
		{"stale", time.Now().Add(-6 * time.Minute), nil, body, 401},
		{"from the future", time.Now().Add(6 * time.Minute), nil, body, 401},
		{"malformed", time.Now(), nil, `{"type":"message"`, 400},
		{"no id", time.Now(), nil, `{"type":"message","conversation":"c1","text":"x"}`, 400},
		{"unknown type", time.Now(), nil, `{"type":"reaction","id":"r1","conversation":"c1"}`, 200},
	} {
		if code := g.post(tc.body, tc.at, tc.sig...); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	inputs, err := g.Store.Inputs(channeltest.Ctx(), "hook:c1", 0, 0)
	if err != nil || len(inputs) != 0 {
		t.Errorf("refused requests stored %+v %v", inputs, err)
	}
	if c := g.Hub.Counts(); c.Refused != 6 || c.Ignored != 1 {
		t.Errorf("counts: %+v", c)
	}
	// Too large.
	big := `{"type":"message","id":"m2","conversation":"c1","text":"` + strings.Repeat("x", 2<<20) + `"}`
	if code := g.post(big, time.Now()); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of 2 MiB: %d", code)
	}
}

// An approval is a message with buttons; a press of Approve by someone
// who may decide continues the run once, and the question's message is
// edited to say who decided; a press by someone who may not changes
// nothing.
func TestApprovalButtons(t *testing.T) {
	g := newRig(t, func(b *channel.Binding) { b.Approvers = []string{"boss"} },
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"})
	if code := g.post(msg("m1", "ana", "deploy please"), time.Now()); code != 200 {
		t.Fatal(code)
	}
	g.DeliverUntil("the question", func() bool { return len(g.rc.messages()) == 1 })
	q := g.rc.messages()[0]
	if len(q.Reply.Buttons) != 3 || q.Reply.Buttons[0].Label != "Approve" || !strings.Contains(q.Reply.Text, `deploy`) {
		t.Fatalf("the question: %+v", q)
	}
	click := func(id, sender, data string) int {
		b, _ := json.Marshal(webhook.Event{Type: "click", ID: id, Sender: sender, Conversation: "c1", Message: "msg-" + q.Key, Data: data})
		return g.post(string(b), time.Now())
	}
	approve := q.Reply.Buttons[0].Data
	if code := click("k0", "ana", approve); code != 200 {
		t.Fatal(code)
	}
	if reqs := g.Pending("hook:c1"); len(reqs) != 1 {
		t.Fatalf("a press by someone who may not decide answered it: %+v", reqs)
	}
	for _, id := range []string{"k1", "k1", "k2"} {
		if code := click(id, "boss", approve); code != 200 {
			t.Fatal(code)
		}
	}
	g.DeliverUntil("the edit and the answer", func() bool { return len(g.rc.messages()) == 3 })
	got := g.rc.messages()
	if got[1].Reply.Type != "edit" || got[1].Reply.Ref != "msg-"+q.Key || !strings.Contains(got[1].Reply.Text, "Approved by boss") || len(got[1].Reply.Buttons) != 0 {
		t.Errorf("the question's edit: %+v", got[1])
	}
	if got[2].Reply.Text != "deployed" {
		t.Errorf("the answer: %+v", got[2])
	}
	if c := g.Hub.Counts(); c.Duplicates != 2 {
		t.Errorf("two presses again should count as duplicates: %+v", c)
	}
}

// A sender who is not allowed gets the refusal, and nothing reaches the
// agent.
func TestNotAllowed(t *testing.T) {
	g := newRig(t, func(b *channel.Binding) { b.Allow, b.Refusal = []string{"ana"}, "Sorry, this agent is for staff." })
	if code := g.post(msg("m1", "mallory", "hi"), time.Now()); code != 200 {
		t.Fatal(code)
	}
	g.Hub.Close() // the refusal is sent beside the request's answer
	if got := g.rc.messages(); len(got) != 1 || got[0].Reply.Text != "Sorry, this agent is for staff." {
		t.Errorf("the refusal: %+v", got)
	}
	inputs, _ := g.Store.Inputs(channeltest.Ctx(), "hook:c1", 0, 0)
	if len(inputs) != 0 {
		t.Errorf("a message of a sender not allowed was stored: %+v", inputs)
	}
}

// A reply the receiver answers 429 with Retry-After is tried again after
// it, and not before; a 5xx backs off; a 4xx is given up.
func TestRetryAfter(t *testing.T) {
	g := newRig(t, nil, scripted.Reply{Text: "one"}, scripted.Reply{Text: "two"})
	var calls atomic.Int32
	g.rc.fail = func(n int) (int, string) {
		if calls.Add(1) == 1 {
			return http.StatusTooManyRequests, "30"
		}
		return 0, ""
	}
	g.post(msg("m1", "ana", "hi"), time.Now())
	// The turn ends; the first try gets 429.
	g.DeliverUntil("the first try", func() bool { return calls.Load() >= 1 })
	items, err := g.Store.OutboxOf(channeltest.Ctx(), "hook:c1")
	if err != nil || len(items) != 1 || items[0].State != session.OutboxPending || !strings.Contains(items[0].Error, "429") {
		t.Fatalf("after a 429: %+v %v", items, err)
	}
	g.Skew.Store(int64(29 * time.Second))
	g.Hub.DeliverDue(context.Background())
	if n := calls.Load(); n != 1 {
		t.Fatalf("tried again before Retry-After: %d calls", n)
	}
	g.Skew.Store(int64(31 * time.Second))
	g.DeliverUntil("the answer after Retry-After", func() bool { return len(g.rc.messages()) == 1 })

	// A 400 is given up on.
	g.rc.mu.Lock()
	g.rc.fail = func(int) (int, string) { return http.StatusBadRequest, "" }
	g.rc.mu.Unlock()
	g.post(msg("m2", "ana", "again"), time.Now())
	g.DeliverUntil("the give-up", func() bool { return g.Hub.Counts().Failed == 1 })
	items, _ = g.Store.OutboxOf(channeltest.Ctx(), "hook:c1")
	if last := items[len(items)-1]; last.State != session.OutboxFailed {
		t.Errorf("after a 400: %+v", last)
	}
}

// A store that fails to take a message: the platform gets 503, nothing is
// acknowledged, and its retry is one input, answered once; a send the
// store cannot settle is sent again when its claim lapses, never lost.
func TestStoreFails(t *testing.T) {
	rc := &receiver{t: t}
	out := httptest.NewServer(rc)
	t.Cleanup(out.Close)
	ch, err := webhook.New(webhook.Config{Secret: secret, ReplyURL: out.URL})
	if err != nil {
		t.Fatal(err)
	}
	var f storetest.Faults
	store := storetest.Faulty(memstore.New(), &f).(channeltest.Store)
	g := &rig{channeltest.NewOn(t, store, channel.Binding{Name: "hook", Channel: ch}, gateway.Config{}, scripted.Reply{Text: "hi back"}), rc}
	f.FailInboxWrite(1, false)
	if code := g.post(msg("m1", "ana", "hi"), time.Now()); code != http.StatusServiceUnavailable {
		t.Fatalf("a message the store refused: %d, want 503", code)
	}
	if in := g.Inputs("hook:c1"); len(in) != 0 {
		t.Fatalf("a refused message was stored: %+v", in)
	}
	if code := g.post(msg("m1", "ana", "hi"), time.Now()); code != 200 {
		t.Fatalf("the platform's retry: %d", code)
	}
	// The first settle of the answer fails: it stays claimed, and is sent
	// again once the claim lapses.
	for deadline := time.Now().Add(20 * time.Second); len(g.Outbox("hook:c1")) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the answer was not committed")
		}
		time.Sleep(5 * time.Millisecond) // polls the store for the turn's commit; orders nothing
	}
	f.FailInboxWrite(2, false) // the claim passes, the settle fails
	g.Hub.DeliverDue(channeltest.Ctx())
	if n := len(g.rc.messages()); n != 1 {
		t.Fatalf("%d answers after the first try", n)
	}
	if it := g.Outbox("hook:c1")[0]; it.State != session.OutboxPending {
		t.Fatalf("an answer whose settle failed: %+v", it)
	}
	g.Skew.Store(int64(2 * time.Minute))
	g.DeliverUntil("the answer again", func() bool { return len(g.rc.messages()) == 2 })
	got := g.rc.messages()
	if got[0].Key != got[1].Key {
		t.Errorf("the two sends' keys: %q and %q, want the same (the receiver drops the second)", got[0].Key, got[1].Key)
	}
	if it := g.Outbox("hook:c1")[0]; it.State != session.OutboxSent {
		t.Errorf("the answer: %+v", it)
	}
	if in := g.Inputs("hook:c1"); len(in) != 1 {
		t.Errorf("%d inputs, want 1", len(in))
	}
}
