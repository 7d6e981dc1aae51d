package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// remoteTool is a tool that delegates (tool.Meta.Delegates) to a pretend
// remote agent, reporting as mode says: "answer" reports the whole
// delegation, "error" and "plain" only its start before they return an
// error or a result; "crash", on its first attempt, its start and
// progress, then waits for its context to end, and on the next its
// answer. Every call's Previous and attempt are kept.
type remoteTool struct {
	mu       sync.Mutex
	previous []string // guarded by mu
	attempts []int    // guarded by mu
}

func (rt *remoteTool) tool() tool.Tool {
	return tool.Must(tool.New("remote", "delegates to a remote agent", func(ctx context.Context, in struct {
		Task string `json:"task"`
		Mode string `json:"mode"`
	}) (string, error) {
		d := tool.DelegationFrom(ctx)
		info, _ := tool.CallInfoFrom(ctx)
		rt.mu.Lock()
		rt.previous = append(rt.previous, d.Previous())
		rt.attempts = append(rt.attempts, info.Attempt)
		rt.mu.Unlock()
		d.Start("far", "remote:"+in.Task, in.Task, d.Previous() != "")
		switch in.Mode {
		case "answer":
			d.Progress("working", "on "+in.Task)
			d.Text("for")
			d.Text("ty-two")
			d.Finish("42")
			return "42", nil
		case "error":
			return "", errors.New("the line dropped")
		case "crash":
			if info.Attempt == 1 {
				d.Progress("working", "")
				<-ctx.Done()
				return "", ctx.Err()
			}
			d.Finish("done at last")
			return "done at last", nil
		}
		return "plain", nil
	}, tool.Meta{Delegates: true}))
}

func remoteCall(task, mode string) scripted.Call {
	return scripted.ToolCall("remote", fmt.Sprintf(`{"task":%q,"mode":%q}`, task, mode))
}

// delegations is what events show of each call's delegation, by call id:
// its subagent_* events, the live subagent_event tokens it streamed (one
// "live" line), and its result.
func delegations(events []*session.Event) map[string][]string {
	out := map[string][]string{}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *session.SubagentStarted:
			out[d.CallID] = append(out[d.CallID], fmt.Sprintf("started %s %s %q resumed=%v", d.Agent, d.ChildSession, d.Task, d.Resumed))
		case *session.SubagentProgress:
			out[d.CallID] = append(out[d.CallID], fmt.Sprintf("progress %s %s %q", d.ChildSession, d.State, d.Message))
		case *session.SubagentEvent:
			tok, _ := d.Event.Data.(*session.Token)
			if tok == nil || d.Event.SessionID != d.ChildSession || d.Event.Agent != "far" {
				out[d.CallID] = append(out[d.CallID], fmt.Sprintf("bad live event %+v", d.Event))
				continue
			}
			l := out[d.CallID]
			if n := len(l); n > 0 && strings.HasPrefix(l[n-1], "live ") {
				l[n-1] += tok.Text
			} else {
				out[d.CallID] = append(l, "live "+tok.Text)
			}
		case *session.SubagentPaused:
			out[d.CallID] = append(out[d.CallID], fmt.Sprintf("paused %s %s", d.ChildSession, d.Reason))
		case *session.SubagentFinished:
			out[d.CallID] = append(out[d.CallID], fmt.Sprintf("finished %s %q", d.ChildSession, d.Answer))
		case *session.SubagentError:
			out[d.CallID] = append(out[d.CallID], fmt.Sprintf("error %s %s %q", d.ChildSession, d.Code, d.Message))
		case *session.ToolResult:
			out[d.CallID] = append(out[d.CallID], fmt.Sprintf("result ok=%v %s%s", d.OK, d.Result, d.Error))
		}
	}
	return out
}

// A tool that delegates reports its delegation through tool.Delegation,
// and the parent's log shows it as an in-process sub-agent's: started,
// progress, the end, with the child's answer streaming live (not stored).
// A delegation its tool left without an end is ended from the call's
// outcome. The same holds for a reply's only call and for calls that run
// together.
func TestToolDelegationEvents(t *testing.T) {
	answer := []string{
		`started far remote:a "a" resumed=false`,
		`progress remote:a working "on a"`,
		`live forty-two`,
		`finished remote:a "42"`,
		`result ok=true "42"`,
	}
	for _, tc := range []struct {
		name  string
		calls []scripted.Call
		want  map[string][]string
	}{
		{"one call", []scripted.Call{remoteCall("a", "answer")}, map[string][]string{"call_1_1": answer}},
		{"calls together", []scripted.Call{remoteCall("a", "answer"), remoteCall("b", "error"), remoteCall("c", "plain")}, map[string][]string{
			"call_1_1": answer,
			"call_1_2": {
				`started far remote:b "b" resumed=false`,
				`error remote:b failed "the line dropped"`,
				`result ok=false the line dropped`,
			},
			"call_1_3": {
				`started far remote:c "c" resumed=false`,
				`finished remote:c "plain"`,
				`result ok=true "plain"`,
			},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &remoteTool{}
			m := scripted.New("m", scripted.Reply{ToolCalls: tc.calls}, scripted.Reply{Text: "done"})
			e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, rt.tool())))
			id := e.session(t, "calc")
			var events []*session.Event
			for ev, err := range e.r.Run(t.Context(), id, agentrt.Input{Text: "go"}) {
				if err != nil {
					t.Fatal(err)
				}
				events = append(events, ev)
			}
			if diff := cmp.Diff(tc.want, delegations(events)); diff != "" {
				t.Errorf("the run's events (-want +got):\n%s", diff)
			}
			stored := delegations(storedLog(t, e.store, id))
			want := map[string][]string{}
			for k, v := range tc.want {
				for _, l := range v {
					if !strings.HasPrefix(l, "live ") {
						want[k] = append(want[k], l)
					}
				}
			}
			if diff := cmp.Diff(want, stored); diff != "" {
				t.Errorf("the stored log (-want +got):\n%s", diff)
			}
		})
	}
}

// crashAt fails the first commit that holds an event of type typ, as if
// the process died just before it.
type crashAt struct {
	session.Store
	typ session.Type

	mu   sync.Mutex
	done bool // guarded by mu
}

var errDied = errors.New("the process died")

func (s *crashAt) Commit(ctx context.Context, c *session.Commit) error {
	s.mu.Lock()
	crash := false
	for _, ev := range c.Events {
		crash = crash || !s.done && ev.Type == s.typ
	}
	s.done = s.done || crash
	s.mu.Unlock()
	if crash {
		return errDied
	}
	return s.Store.Commit(ctx, c)
}

// A delegating call that runs again after its process stopped learns the
// child its earlier attempt started (Previous), from that attempt's
// stored subagent_started, and goes on with it.
func TestToolDelegationPrevious(t *testing.T) {
	rt := &remoteTool{}
	mem := memstore.New()
	call := scripted.Reply{ToolCalls: []scripted.Call{remoteCall("x", "crash")}}
	e := newEnv(t, &crashAt{Store: mem, typ: session.TypeSubagentProgress}, agentrt.Config{},
		calcAgent(scripted.New("m", call), registry(t, rt.tool())))
	id := e.session(t, "calc")
	if _, err := agentrt.Collect(e.r.Run(t.Context(), id, agentrt.Input{Text: "go"})); !errors.Is(err, errDied) {
		t.Fatalf("the first run: %v, want the crash", err)
	}
	e = newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "done"}), registry(t, rt.tool())))
	if res := e.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("resume: %+v", res)
	}
	if diff := cmp.Diff([]string{"", "remote:x"}, rt.previous); diff != "" {
		t.Errorf("Previous of each attempt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2}, rt.attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	want := map[string][]string{"call_1_1": {
		`started far remote:x "x" resumed=false`,
		`started far remote:x "x" resumed=true`,
		`finished remote:x "done at last"`,
		`result ok=true "done at last"`,
	}}
	if diff := cmp.Diff(want, delegations(storedLog(t, mem, id))); diff != "" {
		t.Errorf("the stored log (-want +got):\n%s", diff)
	}
}
