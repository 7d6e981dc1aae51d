package agentrt_test

import (
	"context"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// echoModel streams back the words of the last user message, one chunk
// each, at once: the run commits the model call's end right after its
// last token.
type echoModel struct{}

func (echoModel) Name() string { return "echo" }

func (echoModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		var text string
		for _, m := range slices.Backward(req.Messages) {
			if m.Role == model.RoleUser && len(m.Parts) > 0 {
				text = m.Parts[0].Text
				break
			}
		}
		for w := range strings.FieldsSeq(text) {
			if !yield(model.Chunk{Text: w + " "}, nil) {
				return
			}
		}
		yield(model.Chunk{FinishReason: model.FinishStop}, nil)
	}
}

// process is a runner on a store of its own: another process, as far as
// the relay is concerned.
func process(t *testing.T, dsn, owner string, cfg agentrt.Config, agents ...*agentrt.Agent) *agentrt.Runner {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Agents, cfg.Owner = st, agents, owner
	r, err := agentrt.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close(context.Background())
		st.Close()
	})
	return r
}

// shown is an event as a watcher shows it: committed ones by type and
// seq, tokens by text.
func shown(e *session.Event) string {
	switch d := e.Data.(type) {
	case *session.Token:
		return "token " + d.Text
	case *session.ToolCallDelta:
		return "tool_call_delta " + d.Name + d.Arguments
	}
	return string(e.Type) + " " + strconv.FormatInt(e.Seq, 10)
}

// watchTurn watches session id (in ctx's tenant) on r from seq 0, and
// returns a channel closed once the watcher has shown the log up to seq
// from (it is subscribed then), and one that gets what it shows after
// from, up to the next run_finished.
func watchTurn(t *testing.T, ctx context.Context, r *agentrt.Runner, id string, from int64) (<-chan struct{}, <-chan []string) {
	ready, seen := make(chan struct{}), make(chan []string, 1)
	go func() {
		var evs []string
		pos := int64(0)
		for e, err := range r.Watch(ctx, id, 0) {
			if err != nil {
				t.Error(err)
				break
			}
			if e.Seq != 0 {
				pos = e.Seq
			}
			if pos <= from {
				if pos == from {
					close(ready)
				}
				continue
			}
			evs = append(evs, shown(e))
			if e.Type == session.TypeRunFinished {
				break
			}
		}
		seen <- evs
	}()
	return ready, seen
}

// runTurn runs a turn on r and returns what its caller saw, after seq
// from, as a watcher shows it.
func runTurn(t *testing.T, ctx context.Context, r *agentrt.Runner, id, text string) []string {
	t.Helper()
	var out []string
	for e, err := range r.Run(ctx, id, agentrt.Input{Text: text}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, shown(e))
	}
	return out
}

// Two processes on one Postgres: a watcher in B sees the tokens of A's
// run, each where A's caller sees it — after the committed event it
// follows, before the next — through a turn with a tool call (tokens,
// tool-call deltas, a second model call).
func TestRelayTokensAcrossProcesses(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	m := scripted.New("m",
		scripted.Reply{Text: "warming up", Chunks: 2},
		scripted.Reply{Text: "let me compute", ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2*3"}`)}, Chunks: 3},
		scripted.Reply{Text: "the answer is six", Chunks: 4},
	)
	a := process(t, dsn, "process-a", agentrt.Config{}, calcAgent(m, registry(t)))
	b := process(t, dsn, "process-b", agentrt.Config{}, calcAgent(scripted.New("unused"), nil))
	ctx := t.Context()
	s, err := a.CreateSession(ctx, "calc", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	warm := runTurn(t, ctx, a, s.ID, "warm up")
	ready, seen := watchTurn(t, ctx, b, s.ID, int64(len(warm)-2)) // the warm turn's events, less its two tokens
	<-ready
	want := runTurn(t, ctx, a, s.ID, "2*3?")
	got := <-seen
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("B's watcher (-A's caller +B's watcher):\n%s", diff)
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !strings.HasPrefix(s, "token ") })); n != 7 {
		t.Errorf("%d tokens relayed, want 7", n)
	}
}

// Tokens go to the session they belong to: the same id in another tenant
// is another session, and its watchers never see them.
func TestRelayKeepsTenantsApart(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	a := process(t, dsn, "process-a", agentrt.Config{}, &agentrt.Agent{Name: "echo", Model: echoModel{}})
	b := process(t, dsn, "process-b", agentrt.Config{}, &agentrt.Agent{Name: "echo", Model: echoModel{}})
	acme, beta := session.WithTenant(t.Context(), "acme"), session.WithTenant(t.Context(), "beta")
	for _, ctx := range []context.Context{acme, beta} {
		if _, err := a.CreateSession(ctx, "echo", "shared-id", nil); err != nil {
			t.Fatal(err)
		}
		runTurn(t, ctx, a, "shared-id", "first") // 6 events
	}
	readyA, seenAcme := watchTurn(t, acme, b, "shared-id", 6)
	readyB, seenBeta := watchTurn(t, beta, b, "shared-id", 6)
	<-readyA
	<-readyB
	wantBeta := runTurn(t, beta, a, "shared-id", "beta words only")
	wantAcme := runTurn(t, acme, a, "shared-id", "acme words only")
	if diff := cmp.Diff(wantBeta, <-seenBeta); diff != "" {
		t.Errorf("beta's watcher (-beta's caller +watcher):\n%s", diff)
	}
	// acme's watcher saw beta's run go first: had its tokens leaked, they
	// would be there.
	if diff := cmp.Diff(wantAcme, <-seenAcme); diff != "" {
		t.Errorf("acme's watcher (-acme's caller +watcher):\n%s", diff)
	}
}

// Relaying off, in the process that runs or in the one that watches: the
// watcher sees the committed events only.
func TestRelayOffShowsCommitsOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		aOff, bOff bool
	}{{"off where the run is", true, false}, {"off where the watcher is", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, _ := pgtest.Schema(t)
			a := process(t, dsn, "process-a", agentrt.Config{NoRelay: tc.aOff}, &agentrt.Agent{Name: "echo", Model: echoModel{}})
			b := process(t, dsn, "process-b", agentrt.Config{NoRelay: tc.bOff}, &agentrt.Agent{Name: "echo", Model: echoModel{}})
			ctx := t.Context()
			if _, err := a.CreateSession(ctx, "echo", "s1", nil); err != nil {
				t.Fatal(err)
			}
			runTurn(t, ctx, a, "s1", "first")
			ready, seen := watchTurn(t, ctx, b, "s1", 6)
			<-ready
			ran := runTurn(t, ctx, a, "s1", "some words here")
			committed := slices.DeleteFunc(slices.Clone(ran), func(s string) bool { return strings.HasPrefix(s, "token ") })
			if len(committed) == len(ran) {
				t.Fatalf("the run streamed no tokens: %v", ran)
			}
			if diff := cmp.Diff(committed, <-seen); diff != "" {
				t.Errorf("B's watcher (-committed +watcher):\n%s", diff)
			}
		})
	}
}
