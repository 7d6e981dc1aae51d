// Package channeltest runs channels for tests: a hub over a real runner
// (SQLite), gateway and HTTP server, with an agent whose model says
// scripted replies and whose deploy tool asks for approval.
package channeltest

import (
	"cmp"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// Rig is a hub serving one channel over a runner on SQLite.
type Rig struct {
	T       testing.TB
	Hub     *channel.Hub
	Server  *httptest.Server // the hub's handler
	Runner  *agentrt.Runner
	Gateway *gateway.Gateway
	Store   Store
	Name    string // the channel's
	// Skew puts the hub's clock ahead (a time.Duration): to reach a
	// Retry-After without waiting for it.
	Skew atomic.Int64
}

// New runs binding b (its Name the channel's) over a fresh runner whose
// agent, "assistant", says replies in order, each conversation from the
// first (scripted.Model.ByConversation), and has two tools: deploy, which
// asks for approval, and ask_user.
func New(t testing.TB, b channel.Binding, replies ...scripted.Reply) *Rig {
	t.Helper()
	return NewWith(t, b, gateway.Config{}, replies...)
}

// Store is what the rig's store keeps: sessions, the inbox, the outbox
// and blobs.
type Store interface {
	session.Store
	session.Inbox
	session.Outbox
	session.Blobs
}

// NewWith is New with the gateway's configuration (its Runner is set).
func NewWith(t testing.TB, b channel.Binding, gc gateway.Config, replies ...scripted.Reply) *Rig {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	return NewOn(t, store, b, gc, replies...)
}

// NewOn is NewWith on store (closed when the test ends).
func NewOn(t testing.TB, store Store, b channel.Binding, gc gateway.Config, replies ...scripted.Reply) *Rig {
	t.Helper()
	return NewModel(t, store, b, gc, scripted.New("m", replies...).ByConversation())
}

// NewModel is NewOn with the agent's model m (nil store: a fresh SQLite
// store); hub, when given, changes the hub's configuration.
func NewModel(t testing.TB, store Store, b channel.Binding, gc gateway.Config, m model.Model, hub ...func(*channel.Config)) *Rig {
	t.Helper()
	if store == nil {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
		if err != nil {
			t.Fatal(err)
		}
		store = s
	}
	deploy := tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	})), tool.Meta{Approval: tool.ApprovalAsk})
	tools, err := tool.NewRegistry(deploy, builtin.AskUser())
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Deliver: channel.Owns(b.Name),
		Agents: []*agentrt.Agent{{Name: "assistant", SystemPrompt: "You help.", Model: m, Tools: tools}}})
	if err != nil {
		t.Fatal(err)
	}
	gc.Runner = r
	// As agentrt serve has it: a message answers the question in words
	// its conversation's agent waits on.
	pre := gc.Prefixes[b.Name+":"]
	pre.Prompts = cmp.Or(pre.Prompts, gateway.PromptsAnswer)
	gc.Prefixes = maps.Clone(gc.Prefixes)
	if gc.Prefixes == nil {
		gc.Prefixes = map[string]gateway.SourceConfig{}
	}
	gc.Prefixes[b.Name+":"] = pre
	gw, err := gateway.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	g := &Rig{T: t, Runner: r, Gateway: gw, Store: store, Name: b.Name}
	hc := channel.Config{Runner: r, Gateway: gw, Channels: []channel.Binding{b},
		Now: func() time.Time { return time.Now().Add(time.Duration(g.Skew.Load())) }}
	for _, f := range hub {
		f(&hc)
	}
	g.Hub, err = channel.New(hc)
	if err != nil {
		t.Fatal(err)
	}
	g.Server = httptest.NewServer(g.Hub.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	t.Cleanup(func() {
		g.Server.Close()
		cancel()
		wg.Wait()
		g.Hub.Close()
		_ = r.Close(context.Background())
		_ = store.Close()
	})
	return g
}

// Post posts body to the channel's path with the headers given (name,
// value, …) and returns the status and the answer's body.
func (g *Rig) Post(path, body string, hdr ...string) (int, string) {
	g.T.Helper()
	req, err := http.NewRequest("POST", g.Server.URL+"/v1/channels/"+g.Name+"/"+path, strings.NewReader(body))
	if err != nil {
		g.T.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.T.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		g.T.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// DeliverUntil delivers what is due until ok says so (20 s at most).
func (g *Rig) DeliverUntil(what string, ok func() bool) {
	g.T.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if err := g.Hub.DeliverDue(context.Background()); err != nil {
			g.T.Fatal(err)
		}
		if time.Now().After(deadline) {
			g.T.Fatalf("%s did not happen", what)
		}
		time.Sleep(5 * time.Millisecond) // the turn runs in the gateway's worker; this polls the outbox
	}
}

// Ctx is a context of the default tenant.
func Ctx() context.Context { return session.WithTenant(context.Background(), session.DefaultTenant) }

// Inputs are the inputs stored for source.
func (g *Rig) Inputs(source string) []session.InboxInput {
	g.T.Helper()
	in, err := g.Store.Inputs(Ctx(), source, 0, 0)
	if err != nil {
		g.T.Fatal(err)
	}
	return in
}

// Pending are the requests session id waits on.
func (g *Rig) Pending(id string) []session.PendingRequest {
	g.T.Helper()
	reqs, err := g.Runner.PendingRequests(Ctx(), session.RequestListOptions{SessionID: id})
	if err != nil {
		g.T.Fatal(err)
	}
	return reqs
}

// Outbox is what session id owes.
func (g *Rig) Outbox(id string) []session.OutboxItem {
	g.T.Helper()
	items, err := g.Store.OutboxOf(Ctx(), id)
	if err != nil {
		g.T.Fatal(err)
	}
	return items
}

// RunStarted is the first run_started of session id (nil if none).
func (g *Rig) RunStarted(id string) *session.RunStarted {
	g.T.Helper()
	for ev, err := range g.Store.Events(Ctx(), id, 0) {
		if err != nil {
			g.T.Fatal(err)
		}
		if d, ok := ev.Data.(*session.RunStarted); ok {
			return d
		}
	}
	return nil
}
