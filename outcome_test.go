package agentrt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

func TestDescribeOutcome(t *testing.T) {
	t.Parallel()
	approval := agentrt.HumanRequest{ID: "req_1", Kind: session.RequestApproval, Question: "Allow calculator?"}
	prompt := agentrt.HumanRequest{ID: "req_2", Kind: session.RequestPrompt, Question: "your name?"}
	pick := agentrt.HumanRequest{ID: "req_3", Kind: session.RequestSelect, Question: "which?", Options: []string{"a", "b"}, Multi: true}
	resume := []agentrt.NextStep{{Kind: agentrt.NextResume, SessionID: "s1"}}
	tests := []struct {
		name    string
		res     agentrt.Result
		pending []agentrt.HumanRequest
		want    agentrt.Outcome
	}{
		{"done", agentrt.Result{Status: session.StatusDone}, nil,
			agentrt.Outcome{ExitCode: 0, Summary: "session s1 is done", Next: []agentrt.NextStep{{Kind: agentrt.NextContinue, SessionID: "s1"}}}},
		{"waiting", agentrt.Result{Status: session.StatusWaiting}, []agentrt.HumanRequest{approval, prompt, pick},
			agentrt.Outcome{ExitCode: 3, Summary: "session s1 is waiting for a person", Next: []agentrt.NextStep{
				{Kind: agentrt.NextResolve, SessionID: "s1", RequestID: "req_1", RequestKind: session.RequestApproval, Question: "Allow calculator?"},
				{Kind: agentrt.NextRespond, SessionID: "s1", RequestID: "req_2", RequestKind: session.RequestPrompt, Question: "your name?"},
				{Kind: agentrt.NextRespond, SessionID: "s1", RequestID: "req_3", RequestKind: session.RequestSelect, Question: "which?", Options: []string{"a", "b"}, Multi: true},
			}}},
		{"paused at the round limit", agentrt.Result{Status: session.StatusPaused, Reason: "max_rounds"}, nil,
			agentrt.Outcome{ExitCode: 4, Summary: "session s1 paused at its round limit", Next: resume}},
		{"paused at a budget", agentrt.Result{Status: session.StatusPaused, Reason: "max_tokens"}, nil,
			agentrt.Outcome{ExitCode: 4, Summary: "session s1 paused at limits.max_tokens", Next: resume}},
		{"canceled", agentrt.Result{Status: session.StatusCanceled, Reason: "canceled"}, nil,
			agentrt.Outcome{ExitCode: 1, Summary: "session s1: run canceled", Next: resume}},
		{"stopped by Ctrl-C", agentrt.Result{Status: session.StatusCanceled, Reason: agentrt.CodeSignalInterrupt}, nil,
			agentrt.Outcome{ExitCode: 130, Summary: "session s1: run stopped by Ctrl-C", Next: resume}},
		{"failed", agentrt.Result{Status: session.StatusFailed, Reason: "model_error", Err: &session.Error{Code: "model_error", Message: "boom"}}, nil,
			agentrt.Outcome{ExitCode: 1, Summary: "session s1: run failed: boom", Next: resume}},
		{"interrupted", agentrt.Result{Status: session.StatusInterrupted, Reason: "interrupted"}, nil,
			agentrt.Outcome{ExitCode: 1, Summary: "session s1: run interrupted (interrupted)", Next: resume}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.res.SessionID = "s1"
			if diff := cmp.Diff(tt.want, agentrt.DescribeOutcome(&tt.res, tt.pending)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextStepCommand(t *testing.T) {
	t.Parallel()
	flags := agentrt.CLIFlags{Config: "my dir/agentrt.yaml", Store: "postgres://u:p@h/db?sslmode=disable", Tenant: "acme"}
	const pre = "agentrt --config 'my dir/agentrt.yaml' --store 'postgres://u:p@h/db?sslmode=disable' --tenant acme"
	tests := []struct {
		step  agentrt.NextStep
		flags agentrt.CLIFlags
		want  string
	}{
		{agentrt.NextStep{Kind: agentrt.NextContinue, SessionID: "s1"}, agentrt.CLIFlags{}, "agentrt run --session s1 TEXT"},
		{agentrt.NextStep{Kind: agentrt.NextResume, SessionID: "s1"}, flags, pre + " resume s1"},
		{agentrt.NextStep{Kind: agentrt.NextResume, SessionID: "it's"}, agentrt.CLIFlags{Store: "memory:"}, `agentrt --store memory: resume 'it'\''s'`},
		{agentrt.NextStep{Kind: agentrt.NextResolve, SessionID: "s1", RequestID: "req_1"}, agentrt.CLIFlags{Tenant: "acme"}, "agentrt --tenant acme approve s1 req_1"},
		{agentrt.NextStep{Kind: agentrt.NextRespond, SessionID: "s1", RequestID: "r", RequestKind: session.RequestPrompt}, flags, pre + " respond s1 r TEXT"},
		{agentrt.NextStep{Kind: agentrt.NextRespond, SessionID: "s1", RequestID: "r", RequestKind: session.RequestSelect}, agentrt.CLIFlags{}, "agentrt respond s1 r --select CHOICE"},
		{agentrt.NextStep{Kind: agentrt.NextRespond, SessionID: "s1", RequestID: "r", RequestKind: session.RequestSelect, Multi: true}, agentrt.CLIFlags{}, "agentrt respond s1 r --select CHOICE,CHOICE..."},
		{agentrt.NextStep{Kind: agentrt.NextRespond, SessionID: "s1", RequestID: "r", RequestKind: session.RequestConfirm}, agentrt.CLIFlags{},
			"agentrt respond s1 r --done [--result JSON] | --failed [--reason R] | --retry"},
		{agentrt.NextStep{Kind: agentrt.NextRevoke, SessionID: "s1", RuleID: "rule_1"}, flags, pre + " rules revoke s1 rule_1"},
		{agentrt.NextStep{Kind: agentrt.NextRevoke, SessionID: "s1", RuleID: "rule_1", Agent: "my agent"}, agentrt.CLIFlags{}, "agentrt rules revoke --agent 'my agent' rule_1"},
	}
	for _, tt := range tests {
		if got := tt.step.Command(tt.flags); got != tt.want {
			t.Errorf("%+v:\n got %s\nwant %s", tt.step, got, tt.want)
		}
	}
}

// A run whose context is canceled with ErrSignalInterrupt ends canceled
// with its code as the reason, which DescribeOutcome turns into
// ExitInterrupted.
func TestSignalInterruptCancelsAsInterrupt(t *testing.T) {
	t.Parallel()
	a, err := agentrt.NewAgent("assistant").Model(scripted.New("s", scripted.Reply{Text: "never", Delay: time.Hour})).Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	seq := r.Run(ctx, "s1", agentrt.Input{Text: "hi", Agent: "assistant"})
	res, err := agentrt.Collect(func(yield func(*session.Event, error) bool) {
		for ev, err := range seq {
			if ev != nil && ev.Type == session.TypeModelStarted {
				cancel(agentrt.ErrSignalInterrupt) // the model waits for ever
			}
			if !yield(ev, err) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	res.SessionID = "s1"
	if res.Status != session.StatusCanceled || res.Reason != agentrt.CodeSignalInterrupt {
		t.Fatalf("status %s, reason %q; want canceled, %s", res.Status, res.Reason, agentrt.CodeSignalInterrupt)
	}
	if o := agentrt.DescribeOutcome(res, nil); o.ExitCode != agentrt.ExitInterrupted {
		t.Errorf("exit code %d, want %d", o.ExitCode, agentrt.ExitInterrupted)
	}
	if !errors.Is(context.Cause(ctx), agentrt.ErrSignalInterrupt) {
		t.Error("the cause is lost")
	}
}
