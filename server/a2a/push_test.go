package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// fakeDNS resolves the names of its map, and no other: the tests' DNS.
type fakeDNS map[string]string

func (d fakeDNS) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	ip, ok := d[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

// hook is a webhook on 127.0.0.1 that records the states pushed to it.
type hook struct {
	*httptest.Server
	states chan spec.TaskState
	tokens chan string
}

func newHook(t *testing.T) *hook {
	t.Helper()
	h := &hook{states: make(chan spec.TaskState, 256), tokens: make(chan string, 256)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var sr spec.StreamResponse
		if err := json.Unmarshal(b, &sr); err != nil {
			t.Errorf("a push %s: %v", b, err)
			return
		}
		h.tokens <- r.Header.Get("A2A-Notification-Token")
		switch e := sr.Event.(type) {
		case *spec.Task:
			h.states <- e.Status.State
		case *spec.TaskStatusUpdateEvent:
			h.states <- e.Status.State
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// until reads the states pushed until want (fails t if the test's
// deadline comes first) and returns them.
func (h *hook) until(t *testing.T, want spec.TaskState) []spec.TaskState {
	t.Helper()
	var got []spec.TaskState
	timeout := time.After(time.Minute) // a guard against a hang, not a wait
	for {
		select {
		case s := <-h.states:
			got = append(got, s)
			if s == want {
				return got
			}
		case <-timeout:
			t.Fatalf("states pushed %v; %s did not come in a minute", got, want)
		}
	}
}

// A push config's URL is checked when the config is made, by
// CreateTaskPushNotificationConfig or with a message: an http or https
// URL without credentials, whose host is not, and does not resolve to,
// a loopback, private, link-local, multicast or unspecified address
// (unless allow_private_webhooks); a message whose config is refused is
// not taken (nothing is stored).
func TestPushConfigURLChecked(t *testing.T) {
	dns := fakeDNS{"public.example": "93.184.216.34", "rebind.example": "10.0.0.7", "meta.example": "169.254.169.254"}
	f := newFixture(t, options{strictWebhooks: true, cfg: a2a.Config{Resolver: dns}})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call deploy {\"env\":\"prod\"}")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	tests := []struct {
		url, says string
	}{
		{"ftp://public.example/hook", "want an http or https URL"},
		{"http://ada:secret@public.example/hook", "credentials do not go in the URL"},
		{"http:///hook", "has no host"},
		{"http://127.0.0.1:9/hook", "127.0.0.1 is a loopback address"},
		{"http://[::1]/hook", "::1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]/hook", "is a loopback address"},
		{"http://10.1.2.3/hook", "10.1.2.3 is a private address"},
		{"http://192.168.1.1/hook", "is a private address"},
		{"http://100.64.0.1/hook", "100.64.0.1 is a shared (carrier-grade NAT) address"},
		{"http://169.254.169.254/latest/meta-data", "is a link-local address"},
		{"http://0.0.0.0/hook", "is the unspecified address"},
		{"http://localhost:8080/hook", "localhost is a loopback name"},
		{"http://rebind.example/hook", "rebind.example resolves to 10.0.0.7 is a private address"},
		{"http://meta.example/hook", "resolves to 169.254.169.254 is a link-local address"},
		{"http://nowhere.example/hook", "does not resolve"},
	}
	for _, tt := range tests {
		_, err := c.CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, URL: tt.url})
		if !errors.Is(err, spec.ErrInvalidParams) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("a config for %s: %v; want invalid params saying %q", tt.url, err, tt.says)
		}
		if strings.HasPrefix(tt.url, "http://127") || strings.HasPrefix(tt.url, "http://10.") {
			if !strings.Contains(err.Error(), "allow_private_webhooks") {
				t.Errorf("the refusal of %s does not say how to allow it: %v", tt.url, err)
			}
		}
	}
	ok, err := c.CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, URL: "https://public.example/hook"})
	if err != nil || ok.ID == "" || ok.URL != "https://public.example/hook" {
		t.Fatalf("a config for a public host: %+v %v", ok, err)
	}
	if l, err := c.ListTaskPushConfigs(t.Context(), &spec.ListTaskPushConfigRequest{TaskID: task.ID}); err != nil || len(l) != 1 {
		t.Errorf("the task's configs: %v %v; want the one accepted only", l, err)
	}

	// With a message: refused before anything is stored.
	m := text("hello")
	m.ContextID = "ctx-refused"
	_, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m,
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: "http://10.0.0.1/hook"}}})
	if !errors.Is(err, spec.ErrInvalidParams) || !strings.Contains(err.Error(), "private address") {
		t.Fatalf("a message with a private webhook: %v; want invalid params", err)
	}
	if _, err := f.r.Store().GetSession(t.Context(), "ctx-refused"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the refused message's session: %v; want it never made", err)
	}
	for _, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: m,
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: "http://127.0.0.1:1/hook"}}}) {
		if !errors.Is(err, spec.ErrInvalidParams) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("a streamed message with a loopback webhook: %v; want invalid params", err)
		}
		break
	}
}

// A config stored with a private address (by a server that allowed them)
// is not pushed to by a server that does not: the delivery checks the
// address it dials.
func TestPushDeliveryChecksAddress(t *testing.T) {
	st := memstore.New()
	var logged syncBuffer
	lax := newFixture(t, options{store: st})
	strict := newFixture(t, options{store: st, strictWebhooks: true, cfg: a2a.Config{Log: slog.New(slog.NewTextHandler(&logged, nil))}})
	h := newHook(t)
	res, err := lax.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`)})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	if _, err := lax.client(t, "").CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, URL: h.URL}); err != nil {
		t.Fatal(err)
	}
	// The strict server takes the answer; its pusher follows the task.
	lax.close(t)
	m := text("approve")
	m.TaskID, m.ContextID = task.ID, task.ContextID
	done, err := strict.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil || done.(*spec.Task).Status.State != spec.TaskStateCompleted {
		t.Fatalf("the answer: %v %v", done, err)
	}
	awaitPushed(t, strict, task)
	select {
	case s := <-h.states:
		t.Errorf("%s was pushed to 127.0.0.1 by a server that allows no private webhook", s)
	default:
	}
	if log := logged.String(); !strings.Contains(log, "blocked address range") {
		t.Errorf("the server's log says nothing of the pushes it refused to send:\n%s", log)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use (a log).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// awaitPushed waits until the pushes of task have ended: its delivery
// record is gone.
func awaitPushed(t *testing.T, f *fixture, task *spec.Task) {
	t.Helper()
	recs := f.r.Store().(session.Records)
	deadline := time.Now().Add(time.Minute) // a guard against a hang
	for {
		got, err := recs.SessionRecords(t.Context(), task.ContextID, "a2a.pushing", string(task.ID))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pushes of task %s did not end in a minute: %s", task.ID, got[0].Data)
		}
		runtime.Gosched()
	}
}

// Push configs are kept in the store: a config made on one server is
// listed on another on the same store, and the updates of a task waiting
// for a person, answered on the other, are pushed (by the server that
// follows the answer's run), to the task's end, with the config's token.
func TestPushConfigsAcrossReplicas(t *testing.T) {
	st := memstore.New()
	a := newFixture(t, options{store: st})
	b := newFixture(t, options{store: st})
	h := newHook(t)
	ca, cb := a.client(t, ""), b.client(t, "")
	res, err := ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`),
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: h.URL, Token: "tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	if task.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("the task %s; want input-required", task.Status.State)
	}
	h.until(t, spec.TaskStateInputRequired)
	cfgs, err := cb.ListTaskPushConfigs(t.Context(), &spec.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(cfgs) != 1 || cfgs[0].URL != h.URL || cfgs[0].Token != "tok" {
		t.Fatalf("the configs on the other server: %+v %v; want the one made on the first", cfgs, err)
	}
	got, err := cb.GetTaskPushConfig(t.Context(), &spec.GetTaskPushConfigRequest{TaskID: task.ID, ID: cfgs[0].ID})
	if err != nil || got.URL != h.URL {
		t.Fatalf("GetTaskPushConfig on the other server: %+v %v", got, err)
	}
	if _, err := cb.GetTaskPushConfig(t.Context(), &spec.GetTaskPushConfigRequest{TaskID: task.ID, ID: "nope"}); !errors.Is(err, spec.ErrInvalidParams) ||
		!strings.Contains(err.Error(), `has no push config "nope"`) {
		t.Errorf("GetTaskPushConfig of a config the task has not: %v", err)
	}
	a.close(t) // the server that had the config goes away
	m := text("approve")
	m.TaskID, m.ContextID = task.ID, task.ContextID
	if _, err := cb.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m}); err != nil {
		t.Fatal(err)
	}
	if states := h.until(t, spec.TaskStateCompleted); states[0] != spec.TaskStateWorking {
		t.Errorf("states pushed after the answer %v; want working first, completed last", states)
	}
	if tok := <-h.tokens; tok != "tok" {
		t.Errorf("A2A-Notification-Token %q; want tok", tok)
	}
	awaitPushed(t, b, task)
	if err := cb.DeleteTaskPushConfig(t.Context(), &spec.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: cfgs[0].ID}); err != nil {
		t.Fatal(err)
	}
	if l, err := cb.ListTaskPushConfigs(t.Context(), &spec.ListTaskPushConfigRequest{TaskID: task.ID}); err != nil || len(l) != 0 {
		t.Errorf("the configs after the delete: %v %v; want none", l, err)
	}
}

// A streamed task whose client leaves is still pushed to its end: the
// pusher follows the task, not the stream.
func TestPushAfterTheClientLeft(t *testing.T) {
	f := newFixture(t, options{})
	h := newHook(t)
	ctx, leave := context.WithCancel(t.Context())
	defer leave()
	for ev, err := range f.client(t, "").SendStreamingMessage(ctx, &spec.SendMessageRequest{Message: text("call gate {}"),
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: h.URL}}}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*spec.Task); ok {
			<-f.started
			break // the client leaves while the turn waits on the gate
		}
	}
	leave()
	close(f.release)
	h.until(t, spec.TaskStateCompleted)
}

// A server that stops while it pushes a task's updates hands the task
// over: its push state names no pusher, and the last event pushed, so
// that another server takes it up at once and goes on from there.
func TestPushHandedOverAtShutdown(t *testing.T) {
	st := memstore.New()
	// b runs the task's request; a, which has its config made, pushes.
	// b never looks for tasks to take up (its poll is an hour).
	a := newFixture(t, options{store: st, cfg: a2a.Config{PushLease: time.Hour}})
	b := newFixture(t, options{store: st, cfg: a2a.Config{PushLease: time.Hour, PushPoll: time.Hour}})
	h := newHook(t)
	res, err := b.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}"),
		Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	select {
	case <-a.started:
	case <-b.started:
	}
	if _, err := a.client(t, "").CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, URL: h.URL}); err != nil {
		t.Fatal(err)
	}
	state := func() (pushed int64, owner string) {
		t.Helper()
		recs, err := st.SessionRecords(t.Context(), task.ContextID, "a2a.pushing", string(task.ID))
		if err != nil || len(recs) != 1 {
			t.Fatalf("the push state: %+v %v", recs, err)
		}
		var s struct {
			Pushed int64  `json:"pushed"`
			Owner  string `json:"owner"`
		}
		if err := json.Unmarshal(recs[0].Data, &s); err != nil {
			t.Fatal(err)
		}
		return s.Pushed, s.Owner
	}
	deadline := time.Now().Add(time.Minute) // a guard against a hang
	for _, owner := state(); owner != a.r.Owner(); _, owner = state() {
		if time.Now().After(deadline) {
			t.Fatalf("a does not push the task (the pusher is %q)", owner)
		}
		runtime.Gosched()
	}
	a.close(t)
	if pushed, owner := state(); owner != "" || pushed == 0 {
		t.Errorf("the push state after a stopped: pushed %d, pusher %q; want no pusher, and where it stood", pushed, owner)
	}
	close(a.release)
	close(b.release)
}

// A task has at most 10 push configs (one made again under its id
// replaces it), each of a bounded size.
func TestPushConfigLimits(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`)})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	var ids []string
	for range 10 {
		cfg, err := c.CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, URL: "http://127.0.0.1:1/hook"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cfg.ID)
	}
	if _, err := c.CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, URL: "http://127.0.0.1:1/hook"}); !errors.Is(err, spec.ErrInvalidParams) ||
		!strings.Contains(err.Error(), "has 10 push configs, the most it can have") {
		t.Errorf("an 11th config: %v; want invalid params", err)
	}
	if _, err := c.CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: task.ID, ID: ids[3], URL: "http://127.0.0.1:2/hook"}); err != nil {
		t.Errorf("a config made again under its id: %v", err)
	}
	for _, tc := range []struct {
		cfg  spec.PushConfig
		says string
	}{
		{spec.PushConfig{URL: "http://127.0.0.1/" + strings.Repeat("a", 2048)}, "push config url: 2065 bytes, more than the 2048 allowed"},
		{spec.PushConfig{URL: "http://127.0.0.1/", Token: strings.Repeat("t", 5000)}, "more than the 4096 allowed"},
	} {
		if err := c.DeleteTaskPushConfig(t.Context(), &spec.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: ids[0]}); err != nil {
			t.Fatal(err)
		}
		tc.cfg.TaskID = task.ID
		if _, err := c.CreateTaskPushConfig(t.Context(), &tc.cfg); !errors.Is(err, spec.ErrInvalidParams) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("a config too large: %v; want invalid params saying %q", err, tc.says)
		}
	}
}
