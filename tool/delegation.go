package tool

import (
	"context"
	"sync"
)

// Delegation is how a call that hands its task to an agent outside the
// runtime (a remote A2A agent) reports that agent's work, so that the
// calling session's log shows it as it shows an in-process sub-agent's:
// Start is subagent_started, Progress subagent_progress, Text a live
// subagent_event, and the end one of subagent_paused (Pause),
// subagent_finished (Finish) or subagent_error (Fail).
//
// The runtime puts a Delegation in the context of each call of a tool
// whose Meta sets Delegates; the tool reads it with DelegationFrom. A nil
// *Delegation reports nothing, so a tool reports without checking, and
// runs the same outside a runtime.
//
// A delegation reports Start first, then any number of Progress and Text,
// then at most one end (Pause, Finish or Fail); a report out of that
// order is dropped. Each report returns once the runtime has handled it:
// all but Text are then stored in the session's log, so that a process
// that stops after Start returned leaves the child's name behind for the
// next attempt (Previous). The methods may be called from any goroutine,
// but not after the tool's call has returned. A call that returns after
// Start without reporting an end is ended by the runtime from its result:
// subagent_finished with the result, or subagent_error with the error.
type Delegation struct {
	report   func(DelegationReport)
	previous string

	mu      sync.Mutex // serializes reports, and guards the two below
	started bool
	ended   bool
}

// DelegationKind says what a DelegationReport reports.
type DelegationKind string

// The reports of a Delegation.
const (
	DelegationStarted  DelegationKind = "started"
	DelegationProgress DelegationKind = "progress"
	DelegationText     DelegationKind = "text"
	DelegationPaused   DelegationKind = "paused"
	DelegationFinished DelegationKind = "finished"
	DelegationFailed   DelegationKind = "failed"
)

// DelegationReport is one report of a Delegation, as the runtime gets it.
// Each kind sets the fields its method takes.
type DelegationReport struct {
	Kind DelegationKind
	// Started: the agent worked with, the name of the child (its session,
	// or the remote task: "a2a:" and its id), the task it was given, and
	// whether the call goes on with a child it started before.
	Agent, Child, Task string
	Resumed            bool
	// Progress: the child's state (e.g. "working") and what it said.
	State string
	// Progress: what the child said with its state; Failed: why it
	// failed.
	Message string
	// Text: a piece of the answer as it streams.
	Text string
	// Paused: why the child stopped (e.g. "input_required").
	Reason string
	// Finished: the child's answer.
	Answer string
	// Failed: an error code (docs/events.md).
	Code string
}

// NewDelegation returns a Delegation that hands each report, in order, to
// report, which returns once the report is handled. previous is what
// Previous returns. It is for runtimes, and for tests of tools that
// delegate.
func NewDelegation(previous string, report func(DelegationReport)) *Delegation {
	return &Delegation{report: report, previous: previous}
}

type delegationKey struct{}

// WithDelegation returns ctx carrying d.
func WithDelegation(ctx context.Context, d *Delegation) context.Context {
	return context.WithValue(ctx, delegationKey{}, d)
}

// DelegationFrom returns the Delegation in ctx, or nil if there is none.
func DelegationFrom(ctx context.Context) *Delegation {
	d, _ := ctx.Value(delegationKey{}).(*Delegation)
	return d
}

// Previous is the child the call's earlier attempt started, when the call
// runs again because the process running it stopped before its result
// was stored (CallInfo.Attempt 2 or more) and that attempt's Start was
// stored; "" otherwise. A tool goes on with that child rather than start
// a second one.
func (d *Delegation) Previous() string {
	if d == nil {
		return ""
	}
	return d.previous
}

// Start reports that the call delegates task to agent, working in child;
// resumed when it goes on with a child it started before (one that
// asked a question, or Previous).
func (d *Delegation) Start(agent, child, task string, resumed bool) {
	d.send(DelegationReport{Kind: DelegationStarted, Agent: agent, Child: child, Task: task, Resumed: resumed})
}

// Progress reports the child's state as it changes, with what it said.
func (d *Delegation) Progress(state, message string) {
	d.send(DelegationReport{Kind: DelegationProgress, State: state, Message: message})
}

// Text reports a piece of the child's answer as it streams; it is shown
// live, not stored.
func (d *Delegation) Text(text string) {
	d.send(DelegationReport{Kind: DelegationText, Text: text})
}

// Pause reports that the child stopped before it answered (it asks
// something, say) and can be continued by another call.
func (d *Delegation) Pause(reason string) {
	d.send(DelegationReport{Kind: DelegationPaused, Reason: reason})
}

// Finish reports the child's answer.
func (d *Delegation) Finish(answer string) {
	d.send(DelegationReport{Kind: DelegationFinished, Answer: answer})
}

// Fail reports that the child failed: code (e.g. "failed", "canceled")
// and why.
func (d *Delegation) Fail(code, message string) {
	d.send(DelegationReport{Kind: DelegationFailed, Code: code, Message: message})
}

func (d *Delegation) send(r DelegationReport) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch r.Kind {
	case DelegationStarted:
		if d.started {
			return
		}
		d.started = true
	case DelegationProgress, DelegationText:
		if !d.started || d.ended {
			return
		}
	default:
		if !d.started || d.ended {
			return
		}
		d.ended = true
	}
	if d.report != nil {
		d.report(r)
	}
}
