package agentrt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// progressBomb is React whose state fails on the first subagent_progress
// (a bug of the policy): recording a delegation's progress panics, on the
// run's goroutine, while the child waits for that progress to be recorded.
type progressBomb struct{ agentrt.React }

type progressBombState struct{}

func (progressBomb) NewPolicyState() agentrt.PolicyState { return &progressBombState{} }

func (*progressBombState) Apply(e *session.Event) error {
	if e.Type == session.TypeSubagentProgress {
		return errors.New("this policy cannot fold subagent_progress")
	}
	return nil
}

// A step that panics while a delegation is in flight fails its run, as a
// panic does, and still joins every goroutine it started: the child's run
// goes no further than being canceled, its session is let go of, and Close
// returns.
func TestPanicWithADelegationInFlight(t *testing.T) {
	boss := scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42."})
	calc := scripted.New("calc-model", scripted.Reply{Text: "42"})
	b, c := delegation(t, boss, calc)
	b.Policy = progressBomb{}
	e := newEnv(t, nil, agentrt.Config{}, b, c)
	ctx := t.Context()
	res, err := agentrt.Collect(e.r.Run(ctx, "s1", agentrt.Input{Text: "what is 6*7?", Agent: "boss"}))
	if err != nil || res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != agentrt.CodePanic {
		t.Fatalf("the parent's run: %+v %v, want failed with code panic", res, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a guard against a hang
	defer cancel()
	if err := e.r.Close(cctx); err != nil {
		t.Fatalf("Close: %v: a goroutine of the failed step still holds a session", err)
	}
	started := eventsOf[session.SubagentStarted](storedLog(t, e.store, "s1"))
	if len(started) != 1 {
		t.Fatalf("subagent_started: %+v", started)
	}
	if s, err := e.store.GetSession(ctx, started[0].ChildSession); err != nil || s.Lease != nil {
		t.Fatalf("the child's session: %+v %v, want let go of", s, err)
	}
}
