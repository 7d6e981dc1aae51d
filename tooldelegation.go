package agentrt

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// A toolDelegation is the runtime's side of a tool.Delegation: a call of
// a tool that delegates to an agent outside the runtime (a remote A2A
// agent, tool.Meta.Delegates), and what the parent's log shows of it so
// far. The run's goroutine alone reads and writes it, but for previous,
// set before the call starts.
type toolDelegation struct {
	job      toolJob
	previous string // the child the call's earlier attempt started

	agent, child string
	started      bool
	ended        bool
	state        string    // the last recorded progress's state
	lastPing     time.Time // the last recorded progress
}

// toolReport is a report of a tool's delegation on its way to the run's
// goroutine; done is closed once it is handled (stored, for a durable
// one), which the reporting tool waits for.
type toolReport struct {
	td   *toolDelegation
	r    tool.DelegationReport
	done chan struct{}
}

// newToolDelegation prepares the delegation of job j, a call of a tool
// that delegates. A call that runs again after its process stopped
// learns the child its earlier attempt started, from the log: the last
// subagent_started of the call in this run.
func (x *Exec) newToolDelegation(ctx context.Context, j toolJob) (*toolDelegation, error) {
	td := &toolDelegation{job: j}
	if j.attempt <= 1 {
		return td, nil
	}
	for ev, err := range x.r.store.Events(ctx, x.st.SessionID, 0) {
		if err != nil {
			return nil, &Error{Kind: FailStore, Msg: "read the log for the delegation of call " + j.call.ID, Err: err}
		}
		if d, ok := ev.Data.(*session.SubagentStarted); ok && ev.RunID == x.st.RunID && d.CallID == j.call.ID {
			td.previous = d.ChildSession
		}
	}
	return td, nil
}

// context returns ctx carrying the tool.Delegation the call reports to:
// each report goes to send, and returns once the run's goroutine has
// handled it.
func (td *toolDelegation) context(ctx context.Context, send func(*toolReport)) context.Context {
	d := tool.NewDelegation(td.previous, func(r tool.DelegationReport) {
		done := make(chan struct{})
		send(&toolReport{td: td, r: r, done: done})
		<-done
	})
	return tool.WithDelegation(ctx, d)
}

// onToolReport records a report of a tool's delegation, on the run's
// goroutine: a durable event is committed before the tool goes on; a
// piece of text goes to the live watchers only. Progress is recorded when
// the child's state changes, and otherwise at most every
// subagentProgressEvery, like an in-process child's.
func (x *Exec) onToolReport(ctx context.Context, m *toolReport) error {
	td, r, call := m.td, m.r, m.td.job.call.ID
	switch r.Kind {
	case tool.DelegationStarted:
		td.started, td.agent, td.child = true, r.Agent, r.Child
		emit(x, session.SubagentStarted{CallID: call, Agent: r.Agent, ChildSession: r.Child, Task: r.Task, Resumed: r.Resumed})
	case tool.DelegationProgress:
		now := x.now()
		if r.State == td.state && !td.lastPing.IsZero() && now.Sub(td.lastPing) < subagentProgressEvery {
			return nil
		}
		td.state, td.lastPing = r.State, now
		emit(x, session.SubagentProgress{CallID: call, ChildSession: td.child, State: r.State, Message: r.Message})
	case tool.DelegationText:
		if x.wantsLive() {
			now := x.now()
			child := &session.Event{V: session.SchemaVersion, SessionID: td.child, Type: session.TypeToken,
				Time: now, Agent: td.agent, Data: &session.Token{Text: r.Text}}
			x.yieldLive(newEvent(x, session.SubagentEvent{CallID: call, ChildSession: td.child, Event: child}, now))
		}
		return nil
	case tool.DelegationPaused:
		td.ended = true
		emit(x, session.SubagentPaused{CallID: call, ChildSession: td.child, Reason: r.Reason})
	case tool.DelegationFinished:
		td.ended = true
		emit(x, session.SubagentFinished{CallID: call, ChildSession: td.child, Answer: r.Answer})
	case tool.DelegationFailed:
		td.ended = true
		emit(x, session.SubagentError{CallID: call, ChildSession: td.child, Code: r.Code, Message: r.Message})
	default:
		return nil
	}
	return x.Commit(ctx)
}

// endToolDelegation ends, from the call's outcome, a delegation its tool
// started and left without an end: the parent's log never shows a
// delegation that began and did not end. The event is committed with the
// call's result.
func (x *Exec) endToolDelegation(td *toolDelegation, o *toolOutcome) {
	if !td.started || td.ended || o.canceled {
		return
	}
	td.ended = true
	if !o.res.OK {
		emit(x, session.SubagentError{CallID: td.job.call.ID, ChildSession: td.child, Code: CodeSubagentFailed, Message: o.res.Error})
		return
	}
	answer := string(o.res.Result)
	var s string
	if json.Unmarshal(o.res.Result, &s) == nil {
		answer = s // a tool's text result is a JSON string
	}
	emit(x, session.SubagentFinished{CallID: td.job.call.ID, ChildSession: td.child, Answer: answer})
}
