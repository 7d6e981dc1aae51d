package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Exec is an executor's view of the run in progress: the state, the agent
// and the way to report progress. Events emitted with Emit are applied to
// the state at once and written to the store by Commit (or by the runner
// when the executor returns), in one transaction, before the caller sees
// them.
//
// An Exec is used by one goroutine at a time.
type Exec struct {
	r      *Runner
	agent  *Agent
	st     *State
	hooks  hookSet
	yield  func(*session.Event, error) bool
	live   bool // yield live token events
	failed bool // an error was already yielded

	pending []*session.Event
	last    *session.Event
	end     session.Status
	reason  string
	stopped bool // the consumer stopped reading

	msgs []model.Message
	req  model.Request
	asm  model.Assembler
}

func (r *Runner) newExec(a *Agent, st *State, yield func(*session.Event, error) bool) *Exec {
	return &Exec{r: r, agent: a, st: st, yield: yield, live: yield != nil,
		hooks: hookSet{runner: &r.hooks, agent: &a.Hooks}}
}

// State returns the state. Executors read it; they change it only through
// events.
func (x *Exec) State() *State { return x.st }

// Agent returns the agent being run.
func (x *Exec) Agent() *Agent { return x.agent }

// Now returns the runner's clock reading.
func (x *Exec) Now() time.Time { return x.r.now() }

// NewID returns a fresh id from the runner's id source.
func (x *Exec) NewID() string { return x.r.newID() }

func (x *Exec) info() HookInfo {
	return HookInfo{SessionID: x.st.SessionID, RunID: x.st.RunID, Agent: x.agent.Name, Turn: x.st.Turn, Round: x.st.Round}
}

func (x *Exec) newEvent(d session.Data) *session.Event {
	return &session.Event{
		V: session.SchemaVersion, SessionID: x.st.SessionID, RunID: x.st.RunID, Turn: x.st.Turn,
		Type: d.EventType(), Time: x.r.now(), Agent: x.agent.Name, Data: d,
	}
}

// Emit records an event: it is applied to the state now and committed by
// the next Commit.
func (x *Exec) Emit(d session.Data) {
	e := x.newEvent(d)
	e.Seq = x.st.Seq + 1
	if err := x.st.Apply(e); err != nil {
		// Apply fails only on an inconsistent log, which Emit cannot make.
		panic(err)
	}
	x.pending = append(x.pending, e)
}

func (x *Exec) emitStart(runID string, d *session.RunStarted) {
	e := x.newEvent(d)
	e.Seq = x.st.Seq + 1
	e.RunID = runID
	e.Turn = x.st.Turn + 1
	_ = x.st.Apply(e)
	x.pending = append(x.pending, e)
}

// Live yields a live-only event (a token) without storing it.
func (x *Exec) Live(d session.Data) {
	if !x.live || x.stopped {
		return
	}
	if !x.yield(x.newEvent(d), nil) {
		x.stopped = true
	}
}

// End makes the next Commit end the run with status (adding run_finished
// and a state snapshot).
func (x *Exec) End(status session.Status, reason string) {
	x.end, x.reason = status, reason
}

// Commit writes the emitted events in one transaction and then yields them.
func (x *Exec) Commit(ctx context.Context) error {
	end := x.end
	if end != "" {
		x.end = ""
		x.Emit(&session.RunFinished{Status: string(end), Usage: x.st.RunUsage, Reason: x.reason})
	}
	if len(x.pending) == 0 {
		return nil
	}
	c := session.Commit{
		SessionID: x.st.SessionID,
		ExpectSeq: x.pending[0].Seq - 1,
		Events:    x.pending,
		Status:    x.st.Status,
		Turn:      x.st.Turn,
		Usage:     x.st.Usage,
		Time:      x.r.now(),
	}
	if end != "" {
		b, err := x.st.MarshalSnapshot()
		if err != nil {
			return &Error{Kind: KindInternal, Msg: "snapshot", Err: err}
		}
		c.Snapshot = &session.Snapshot{Seq: x.st.Seq, Data: b}
	}
	if err := x.r.store.Commit(ctx, &c); err != nil {
		x.pending = x.pending[:0]
		if errors.Is(err, session.ErrConflict) {
			return &Error{Kind: KindStore, Code: "conflict", Msg: "session " + x.st.SessionID + " was advanced by another writer", Err: err}
		}
		return &Error{Kind: KindStore, Msg: "commit", Err: err}
	}
	for _, e := range x.pending {
		x.last = e
		if x.yield != nil && !x.stopped {
			if !x.yield(e, nil) {
				x.stopped = true
			}
		}
	}
	x.pending = x.pending[:0]
	if end != "" {
		x.hooks.turnEnd(ctx, x.info(), end, x.st.RunUsage)
	}
	return nil
}

func (x *Exec) yieldErr(err error) {
	if x.yield != nil && !x.stopped && !x.failed {
		x.failed = true
		x.yield(nil, err)
	}
}

// fail ends the run after err: an error event and run_finished (failed,
// or canceled when the context was canceled).
func (x *Exec) fail(ctx context.Context, err error) {
	re := AsError(err)
	status := session.StatusFailed
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || re.Kind == KindCanceled {
		status = session.StatusCanceled
		if re.Kind != KindCanceled {
			re = &Error{Kind: KindCanceled, Code: "canceled", Msg: "the run was canceled", Err: err}
		}
	}
	if re.Kind == KindStore {
		// The store failed: state in memory may be ahead of the store.
		// Report and leave the stored run as it was (resumable).
		x.yieldErr(re)
		return
	}
	x.Emit(&session.Error{Code: re.ErrorCode(), Message: re.Error(), Recoverable: re.IsRecoverable()})
	x.End(status, re.ErrorCode())
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if cerr := x.Commit(wctx); cerr != nil {
		x.yieldErr(cerr)
	}
}
