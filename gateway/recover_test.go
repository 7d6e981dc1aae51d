package gateway_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// A gateway's process stops during its turn's model call, after the
// turn's first commit marked the input answered: no pending input brings
// the turn back. The next gateway's Run resumes it where it stopped — the
// model is called again and its answer stored — and answers no input a
// second time.
func TestRunResumesATurnWhoseProcessStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New()
		var faults storetest.Faults
		// The first gateway's runner is of another host: only its lease's
		// expiry tells that it is gone.
		dying := &bot{inModel: make(chan struct{}, 1)}
		first := newRunnerOn(t, storetest.Faulty(store, &faults), dying, "elsewhere:1:x")
		g1, err := gateway.New(gateway.Config{Runner: first})
		if err != nil {
			t.Fatal(err)
		}
		in, err := g1.Submit(context.Background(), gateway.Input{Source: "chat", Text: "slow question"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { g1.Run(ctx); close(done) }()
		<-dying.inModel
		// The process dies: nothing it does from now on reaches the store.
		faults.FailCommit(1, true)
		faults.FailLease(1, true)
		faults.FailRead(1, true)
		faults.FailInboxWrite(1, true)
		cancel()
		<-done
		first.Close(context.Background())
		ins, err := store.Inputs(context.Background(), "chat", 0, 0)
		if err != nil || len(ins) != 1 || ins[0].State != session.InputAnswered || ins[0].RunID == "" {
			t.Fatalf("after the crash, the inbox holds %+v (%v), want the input answered", ins, err)
		}
		run := ins[0].RunID
		if s, err := store.GetSession(context.Background(), "chat"); err != nil || s.Status != session.StatusRunning {
			t.Fatalf("after the crash, session chat: %+v %v, want it running", s, err)
		}

		time.Sleep(2 * agentrt.DefaultLeaseTTL) // the dead runner's lease expires
		answering := &bot{release: make(chan struct{})}
		close(answering.release)
		second := newRunnerOn(t, store, answering, "")
		var failures []error
		g2, err := gateway.New(gateway.Config{Runner: second, OnError: func(_ string, err error) { failures = append(failures, err) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		done = make(chan struct{})
		go func() { g2.Run(ctx); close(done) }()
		synctest.Wait()
		cancel()
		<-done
		second.Close(context.Background())

		if len(failures) > 0 {
			t.Errorf("the second gateway reported %v", failures)
		}
		starts := events[session.RunStarted](t, store, "chat")
		if len(starts) != 1 || !slices.Equal(starts[0].Inputs, []string{in.ID}) {
			t.Errorf("run_started %+v, want one turn answering %s", starts, in.ID)
		}
		if rs := events[session.RunResumed](t, store, "chat"); len(rs) != 1 || rs[0].Reason != agentrt.ResumeRecovered {
			t.Errorf("run_resumed %+v, want the turn resumed once, recovered", rs)
		}
		if fin := events[session.Final](t, store, "chat"); len(fin) != 1 || fin[0].Text != "answer to: slow question" {
			t.Errorf("final %+v, want the model's answer to the input", fin)
		}
		if fin := events[session.RunFinished](t, store, "chat"); len(fin) != 1 || fin[0].Status != session.StatusDone {
			t.Errorf("run_finished %+v, want the turn done", fin)
		}
		if n := len(answering.seen()); n != 1 {
			t.Errorf("the second gateway made %d model calls, want 1: the call the crash cut short", n)
		}
		ins, _ = store.Inputs(context.Background(), "chat", 0, 0)
		if len(ins) != 1 || ins[0].State != session.InputAnswered || ins[0].RunID != run {
			t.Errorf("the inbox holds %+v, want the input answered by run %s", ins, run)
		}
	})
}

// newRunnerOn is a runner on store whose assistant talks to b; owner ""
// is the runner's default (this process).
func newRunnerOn(t *testing.T, store session.Store, b *bot, owner string) *agentrt.Runner {
	t.Helper()
	a := &agentrt.Agent{Name: "assistant", Model: b}
	a.Compaction.Off = true
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
