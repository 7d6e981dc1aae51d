package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

// callRecorder records the CallInfo of every call.
type callRecorder struct {
	mu    sync.Mutex
	infos []tool.CallInfo
}

func (c *callRecorder) tool(name string, meta tool.Meta, fail *atomic.Bool) tool.Tool {
	return tool.WithMeta(tool.Must(tool.New(name, "charges a card", func(ctx context.Context, in struct {
		Cents int `json:"cents"`
	}) (string, error) {
		info, _ := tool.CallInfoFrom(ctx)
		c.mu.Lock()
		c.infos = append(c.infos, info)
		c.mu.Unlock()
		return fmt.Sprintf("charged %d", in.Cents), nil
	})), meta)
}

// Every call carries a stable idempotency key and its attempt; a
// call in flight when its run stopped runs again with the same key (at
// least once), unless its tool is AtMostOnce: then a person says whether
// it took effect.
func TestIdempotencyKeyAndAtMostOnce(t *testing.T) {
	charge := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("charge", `{"cents":500}`)}}
	// setup runs a turn whose tool result cannot be stored: the tool ran,
	// the store failed (as if the process died right after the call).
	setup := func(t *testing.T, meta tool.Meta) (*memstore.Store, *callRecorder, string) {
		var faults storetest.Faults
		mem := memstore.New()
		rec := &callRecorder{}
		e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", charge), registry(t, rec.tool("charge", meta, nil))))
		id := e.session(t, "calc")
		faults.FailCommit(3, false) // model_started, model_finished with tool_call, then the result
		if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "pay"})); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("run: %v", err)
		}
		if len(rec.infos) != 1 {
			t.Fatalf("%d calls, want 1", len(rec.infos))
		}
		return mem, rec, id
	}
	t.Run("at least once", func(t *testing.T) {
		mem, rec, id := setup(t, tool.Meta{})
		e := newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "paid"}), registry(t, rec.tool("charge", tool.Meta{}, nil))))
		if res := e.resume(t, id); res.Status != session.StatusDone {
			t.Fatalf("resume: %+v", res)
		}
		if len(rec.infos) != 2 {
			t.Fatalf("%d calls, want 2", len(rec.infos))
		}
		first, second := rec.infos[0], rec.infos[1]
		if first.IdempotencyKey == "" || first.IdempotencyKey != second.IdempotencyKey || first.SessionID != id {
			t.Errorf("keys %q and %q, want one stable key", first.IdempotencyKey, second.IdempotencyKey)
		}
		if first.Attempt != 1 || second.Attempt != 2 {
			t.Errorf("attempts %d, %d, want 1, 2", first.Attempt, second.Attempt)
		}
	})
	for _, tc := range []struct {
		decision string
		res      agentrt.Resolution
		runs     int
		want     string
	}{
		{"done", agentrt.Resolution{Decision: "done", Result: json.RawMessage(`{"receipt":"r-17"}`), By: "ana"}, 1, `"r-17"`},
		{"failed", agentrt.Resolution{Decision: "failed", Reason: "card declined", By: "ana"}, 1, "card declined"},
		{"retry", agentrt.Resolution{Decision: "retry", By: "ana"}, 2, "charged 500"},
	} {
		t.Run("at most once/"+tc.decision, func(t *testing.T) {
			meta := tool.Meta{AtMostOnce: true}
			mem, rec, id := setup(t, meta)
			m := scripted.New("m", scripted.Reply{Text: "settled", Expect: &scripted.Expect{LastToolResultContains: tc.want}})
			e := newEnv(t, mem, agentrt.Config{}, calcAgent(m, registry(t, rec.tool("charge", meta, nil))))
			res := e.resume(t, id)
			if res.Status != session.StatusWaiting {
				t.Fatalf("resume: %+v, want waiting for a person", res)
			}
			if len(rec.infos) != 1 {
				t.Fatalf("the tool ran again before a person decided")
			}
			var req *session.InputRequired
			for _, ev := range res.Events {
				if d, ok := ev.Data.(*session.InputRequired); ok {
					req = d
				}
			}
			if req == nil || req.Kind != session.RequestConfirm || len(req.Calls) != 1 || !strings.Contains(req.Question, "charge") {
				t.Fatalf("request %+v, want a confirm about the charge", req)
			}
			if _, err := e.r.Resolve(context.Background(), id, req.RequestID, tc.res); err != nil {
				t.Fatal(err)
			}
			res = e.resume(t, id)
			if res.Status != session.StatusDone {
				t.Fatalf("after %s: %+v", tc.decision, res)
			}
			if len(rec.infos) != tc.runs {
				t.Errorf("the tool ran %d times, want %d", len(rec.infos), tc.runs)
			}
			if tc.runs == 2 && rec.infos[1].Attempt != 2 {
				t.Errorf("the retry is attempt %d, want 2", rec.infos[1].Attempt)
			}
			storedLog(t, mem, id)
		})
	}
}

// A resolution of a confirm request that is not done, failed or retry is
// refused, as is a result that is not JSON; nothing is written.
func TestConfirmBadInput(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	rec := &callRecorder{}
	meta := tool.Meta{AtMostOnce: true}
	charge := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("charge", `{"cents":5}`)}}
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", charge), registry(t, rec.tool("charge", meta, nil))))
	id := e.session(t, "calc")
	faults.FailCommit(3, false)
	agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "pay"}))
	e = newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t, rec.tool("charge", meta, nil))))
	res := e.resume(t, id)
	rid := res.Events[len(res.Events)-2].Data.(*session.InputRequired).RequestID
	before := storedLog(t, mem, id)
	for _, tc := range []struct {
		res  agentrt.Resolution
		code string
	}{
		{agentrt.Resolution{Decision: "approve"}, "bad_decision"},
		{agentrt.Resolution{Decision: "done", Result: json.RawMessage(`{"a":`)}, "bad_result"},
		{agentrt.Resolution{Decision: ""}, "bad_decision"},
	} {
		_, err := e.r.Resolve(context.Background(), id, rid, tc.res)
		var re *agentrt.Error
		if !errors.As(err, &re) || re.ErrorCode() != tc.code {
			t.Errorf("%+v: %v, want %s", tc.res, err, tc.code)
		}
	}
	if diff := cmp.Diff(before, storedLog(t, mem, id)); diff != "" {
		t.Errorf("bad input changed the log:\n%s", diff)
	}
}

// TestBlockedCallIsNotInDoubt: a call announced as blocked does not run,
// so a process that stops before its failed result is stored leaves no
// doubt about it: on resume it is not a confirm request, even for an
// at-most-once tool.
func TestBlockedCallIsNotInDoubt(t *testing.T) {
	call := model.ToolCall{ID: "c1", Name: "charge", Arguments: json.RawMessage(`{}`)}
	for _, tc := range []struct {
		blocked string
		started bool
	}{{"", true}, {"the user rejected this call", false}} {
		st := agentrt.NewState("s", "a")
		for _, d := range []session.Data{
			&session.RunStarted{Input: "charge"},
			&session.ModelFinished{ToolCalls: []model.ToolCall{call}},
			&session.ToolCall{CallID: "c1", Name: "charge", Arguments: call.Arguments, Blocked: tc.blocked},
		} {
			if err := st.Apply(&session.Event{Type: d.EventType(), Data: d}); err != nil {
				t.Fatal(err)
			}
		}
		if len(st.Calls) != 1 || st.Calls[0].Started != tc.started {
			t.Errorf("blocked %q: calls %+v, want started %v", tc.blocked, st.Calls, tc.started)
		}
	}
}
