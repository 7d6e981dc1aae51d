package gateway_test

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// randomModel answers with tool calls (one to three at once) or text, at
// random, after a random think time; it checks every request it gets
// against the providers' rules for tool calls.
type randomModel struct {
	mu   sync.Mutex
	rng  *rand.Rand
	bad  []string
	seen int
}

func (m *randomModel) Name() string { return "random" }

func (m *randomModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m.mu.Lock()
		m.seen++
		if problem := pairing(req.Messages); problem != "" {
			m.bad = append(m.bad, problem)
		}
		think := time.Duration(m.rng.IntN(400)) * time.Millisecond
		calls := 0
		if m.rng.IntN(3) > 0 {
			calls = 1 + m.rng.IntN(3)
		}
		n := m.seen
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			yield(model.Chunk{}, ctx.Err())
			return
		case <-time.After(think):
		}
		if calls == 0 {
			yield(model.Chunk{Text: "an answer", FinishReason: model.FinishStop}, nil)
			return
		}
		var deltas []model.ToolCallDelta
		for i := range calls {
			deltas = append(deltas, model.ToolCallDelta{Index: i, ID: fmt.Sprintf("c%d_%d", n, i), Name: "work", Arguments: `{}`})
		}
		yield(model.Chunk{ToolCalls: deltas, FinishReason: model.FinishToolCalls}, nil)
	}
}

// pairing returns how msgs break the providers' rules for tool calls
// (OpenAI: every assistant message with tool_calls is followed by a tool
// message for each of its ids, before any other message; no tool message
// answers a call not made just before. Anthropic: each tool_use is
// answered by a tool_result in the next user turn), or "".
func pairing(msgs []model.Message) string {
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == model.RoleTool {
			return fmt.Sprintf("message %d: a tool result without the calls before it", i)
		}
		if m.Role != model.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range m.ToolCalls {
			want[c.ID] = true
		}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == model.RoleTool; j++ {
			if !want[msgs[j].ToolCallID] {
				return fmt.Sprintf("message %d: a result for %s, not a call of message %d", j, msgs[j].ToolCallID, i)
			}
			delete(want, msgs[j].ToolCallID)
		}
		if len(want) > 0 {
			return fmt.Sprintf("message %d: calls without a result: %v", i, want)
		}
		i = j - 1
	}
	return ""
}

// Over random interleavings of inputs from several sources, interrupts
// and tool calls of random duration: every request the model gets keeps
// the tool-call rules, each source's inputs are answered exactly once and
// in order, and no two turns of a source overlap.
func TestRandomInterleavings(t *testing.T) {
	for seed := range 12 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				m := &randomModel{rng: rand.New(rand.NewPCG(uint64(seed), 11))}
				var tmu sync.Mutex
				trng := rand.New(rand.NewPCG(uint64(seed), 13))
				work := tool.Must(tool.New("work", "works a while", func(ctx context.Context, _ struct{}) (string, error) {
					tmu.Lock()
					d := time.Duration(trng.IntN(300)) * time.Millisecond
					tmu.Unlock()
					time.Sleep(d) // tool calls in flight finish, interrupt or not
					return "worked", nil
				}))
				reg, err := tool.NewRegistry(work)
				if err != nil {
					t.Fatal(err)
				}
				a := &agentrt.Agent{Name: "assistant", Model: m, Tools: reg}
				a.Compaction.Off = true
				a.Limits.MaxRounds = 50
				store := memstore.New()
				r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
				if err != nil {
					t.Fatal(err)
				}
				policies := []gateway.Policy{gateway.Interrupt, gateway.Queue, gateway.Steer}
				sources := map[string]gateway.SourceConfig{}
				for i, p := range policies {
					sources[fmt.Sprint("s", i)] = gateway.SourceConfig{Policy: p, Debounce: time.Duration(rng.IntN(3)) * 100 * time.Millisecond}
				}
				g, err := gateway.New(gateway.Config{Runner: r, Sources: sources, Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { g.Run(ctx); close(done) }()
				sent := map[string][]string{}
				for i := range 30 {
					src := fmt.Sprint("s", rng.IntN(len(policies)))
					s, err := g.Submit(context.Background(), gateway.Input{Source: src, Text: fmt.Sprint("input ", i)})
					if err != nil {
						t.Fatal(err)
					}
					sent[src] = append(sent[src], s.ID)
					time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
				}
				// Let every turn end: the model and the tools take at most a
				// few seconds of virtual time each.
				for range 100 {
					time.Sleep(time.Second)
					synctest.Wait()
					if p, _ := g.Pending(context.Background()); len(p) > 0 {
						continue
					}
					busy := false
					for src := range sent {
						if _, ok := r.Active(context.Background(), src); ok {
							busy = true
						}
					}
					if !busy {
						break
					}
				}
				cancel()
				<-done
				r.Close(context.Background())
				m.mu.Lock()
				defer m.mu.Unlock()
				if len(m.bad) > 0 {
					t.Fatalf("requests broke the tool-call rules: %v", m.bad)
				}
				interrupts, results := 0, 0
				defer func() { t.Logf("%d interrupted turns, %d tool results", interrupts, results) }()
				for src, ids := range sent {
					var answered []string
					running := false
					for e, err := range store.Events(context.Background(), src, 0) {
						if err != nil {
							t.Fatal(err)
						}
						switch d := e.Data.(type) {
						case *session.RunStarted:
							if running {
								t.Fatalf("%s: a turn began while another ran", src)
							}
							running = true
							answered = append(answered, d.Inputs...)
						case *session.InputSteered:
							answered = append(answered, d.Inputs...)
						case *session.RunFinished:
							running = false
							if d.Status == session.StatusInterrupted {
								interrupts++
							}
						case *session.ToolResult:
							results++
						}
					}
					if !slices.Equal(answered, ids) {
						t.Fatalf("%s: answered %v, sent %v (each once, in order)", src, answered, ids)
					}
				}
			})
		})
	}
}
