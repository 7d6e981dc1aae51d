package agentrt_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// A model that gives every call the same id, reply after reply (some
// OpenAI-compatible servers do), has each call recorded under an id of
// its own in the session: a second call is not taken for the first —
// not by a sub-agent (its child session), not by a tool's idempotency
// key, in the same run or in the next.
func TestRepeatedCallIDsAcrossReplies(t *testing.T) {
	call := func(name, args string) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{{ID: "call_1", Name: name, Arguments: args}}}
	}
	boss := scripted.New("boss",
		call("calc", `{"task":"first"}`), call("calc", `{"task":"second"}`), scripted.Reply{Text: "both"},
		call("keyed", `{}`), scripted.Reply{Text: "keyed once"},
		call("keyed", `{}`), scripted.Reply{Text: "keyed again"})
	calc := scripted.New("calc-model", scripted.Reply{Text: "one"}, scripted.Reply{Text: "two"})
	var mu sync.Mutex
	var keys []string
	keyed := tool.Must(tool.New("keyed", "records its idempotency key", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallInfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, info.IdempotencyKey)
		return "ok", nil
	}))
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", ""), keyed)
	if err != nil {
		t.Fatal(err)
	}
	b := &agentrt.Agent{Name: "boss", Model: boss, Tools: reg}
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b, calcAgent(calc, nil))
	id := e.session(t, "boss")
	if res := e.run(t, id, "delegate twice"); res.Status != session.StatusDone || res.Text != "both" {
		t.Fatalf("run: %s %q", res.Status, res.Text)
	}
	log := storedLog(t, store, id)
	started, finished := eventsOf[session.SubagentStarted](log), eventsOf[session.SubagentFinished](log)
	if len(started) != 2 || started[0].ChildSession == started[1].ChildSession || started[0].CallID == started[1].CallID {
		t.Fatalf("subagent_started %+v: want two calls with two child sessions", started)
	}
	if len(finished) != 2 || finished[0].Answer != "one" || finished[1].Answer != "two" {
		t.Fatalf("subagent_finished %+v: want the answers one, two", finished)
	}
	results := toolResults(log)
	if len(results) != 2 || !strings.Contains(string(results[1].Result), `"two"`) || results[0].CallID == results[1].CallID {
		t.Fatalf("tool results %+v: want the second call's answer two, under its own id", results)
	}
	for _, text := range []string{"keyed once", "keyed again"} {
		// Live fragments of the call say the id model_finished gives it.
		var live, final []string
		for ev, err := range e.r.Run(t.Context(), id, agentrt.Input{Text: "call keyed"}) {
			if err != nil {
				t.Fatal(err)
			}
			switch d := ev.Data.(type) {
			case *session.ToolCallDelta:
				if d.CallID != "" {
					live = append(live, d.CallID)
				}
			case *session.ModelFinished:
				for _, c := range d.ToolCalls {
					final = append(final, c.ID)
				}
			case *session.RunFinished:
				if s, err := store.GetSession(t.Context(), id); err != nil || s.Status != session.StatusDone {
					t.Fatalf("run: %v %v; want done", s, err)
				}
			}
		}
		if len(final) != 1 || len(live) == 0 || live[0] != final[0] {
			t.Errorf("%s: live fragments said %v, model_finished %v; want the same id", text, live, final)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Errorf("idempotency keys of two calls in two runs: %q; want two different", keys)
	}
}

// A model that repeats its call ids keeps having them renamed once the
// calls that had them first are compacted out of the history: the
// session remembers the ids the model repeats (model_finished's
// renamed_call_ids), and no two calls share an idempotency key.
func TestRepeatedCallIDsAfterCompaction(t *testing.T) {
	const runs = 8
	var replies, summaries []scripted.Reply
	for range runs {
		replies = append(replies, scripted.Reply{ToolCalls: []scripted.Call{{ID: "call_1", Name: "keyed", Arguments: `{}`}}}, scripted.Reply{Text: "ok"})
		summaries = append(summaries, scripted.Reply{Text: "summary"}, scripted.Reply{Text: "summary"})
	}
	var keys []string
	keyed := tool.Must(tool.New("keyed", "records its idempotency key", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallInfoFrom(ctx)
		keys = append(keys, info.IdempotencyKey) // one call at a time
		return "ok", nil
	}))
	reg, err := tool.NewRegistry(keyed)
	if err != nil {
		t.Fatal(err)
	}
	b := &agentrt.Agent{Name: "boss", Model: scripted.New("boss", replies...), Tools: reg,
		Compaction: agentrt.Compaction{MaxMessages: 8, KeepRecent: 4, Model: scripted.New("sum", summaries...)}}
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b)
	id := e.session(t, "boss")
	for i := range runs {
		if res := e.run(t, id, "call keyed"); res.Status != session.StatusDone {
			t.Fatalf("run %d: %s", i, res.Status)
		}
	}
	seen := map[string]int{}
	for i, k := range keys {
		if j, ok := seen[k]; ok {
			t.Errorf("call %d has the idempotency key of call %d: %s", i, j, k)
		}
		seen[k] = i
	}
	if len(keys) != runs {
		t.Errorf("%d calls ran; want %d", len(keys), runs)
	}
	var compacted bool
	for _, ev := range storedLog(t, store, id) {
		compacted = compacted || ev.Type == session.TypeCompaction
	}
	if !compacted {
		t.Error("the history was never compacted: the test shows nothing")
	}
}
