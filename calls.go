package agentrt

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Running a batch's tool calls one by one (StepSessionCalls, RunCall):
// for an engine that gives each tool call a unit of work of its own (an
// activity) — its own timeout, heartbeats, retries and line in the
// engine's UI — instead of a step that runs the whole batch.
//
// The step that comes to a batch of tool calls decides them as CallTools
// does (approvals, standing decisions, hooks; the blocked ones get their
// failed result at once) and leaves the calls to run held in this
// process: the session stays leased here, busy, as during a step. Each
// RunCall then announces its call (tool_call, committed before the tool
// runs, as CallTools does), runs it — concurrently with the others, in
// the run's context, so that a cancellation reaches it — and commits its
// result. Once every call has an outcome the batch is over, and the
// session is held for its next step as after any step; a run canceled or
// interrupted meanwhile stops there, as it would after CallTools.
//
// A call that no RunCall claims within a lease TTL (its engine gave it to
// a process that died, or chose to step the session elsewhere) is given
// up: it was never announced, so the session's next step runs it by the
// usual rules.
//
// A fresh delegation to a sub-agent is announced in the step, which
// begins the child's turn (run_started in the child's session, let go of)
// for the engine to run — as a child workflow, say; RunCall then records
// the turn's end as the call's result (a child waiting for a person makes
// its requests the parent's). A parent canceled or interrupted meanwhile
// asks its children's runs to stop the same way. A delegation that
// continues a sub-agent's session, or finds it begun already (a crash),
// and a tool that delegates (tool.Meta.Delegates) run in the step, as
// ever, reporting to the run while they go.

// DeferredCall is a tool call a step left for RunCall.
type DeferredCall struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Attempt int    `json:"attempt,omitempty"`
	// Child, for a delegation to a sub-agent, is the child's turn the
	// step began: the engine runs it (a child workflow), then RunCall
	// records its end as the call's result.
	Child *ChildRun `json:"child,omitempty"`
}

// ChildRun is a sub-agent's turn a step began for a delegation.
type ChildRun struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	Agent     string `json:"agent"`
}

// CallOutcome is what a call RunCall ran came to, in short (the result
// is in the session's log).
type CallOutcome struct {
	// Ran: the tool ran and its result is stored. False for a call the
	// run stopped before it began, or whose tool was canceled with the
	// run before it had an outcome.
	Ran   bool   `json:"ran"`
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// callBatch is the tool calls of a step left for RunCall, held with their
// session's hold (hold.batch).
type callBatch struct {
	hd   *hold
	info HookInfo
	ctx  context.Context // the run's (the hold's), canceled also by a failed commit
	stop context.CancelCauseFunc
	give func() bool // stops the AfterFunc that gives up unclaimed calls when ctx ends

	mu    sync.Mutex
	x     *Exec // the run's; used under mu only
	jobs  []toolJob
	state []callState
	// dels and child, beside jobs: a delegation to a sub-agent, and the
	// id of the child's run begun for it ("": it could not begin).
	dels    []*delegation
	child   []string
	ended   []bool        // the child's turn was over, or idle, at the last tick
	seen    []int64       // the child's last seq at the last tick
	ttl     time.Duration // between ticks
	stopped bool          // the children were asked to stop
	running int
	err     error // a commit failed: the step fails with it once the calls end
	timer   *time.Timer
	over    bool
}

type callState uint8

const (
	callWaiting callState = iota
	callRunning
	callDone
	callGivenUp
)

// StepSessionCalls is StepSession, except that a step whose instruction
// is a batch of tool calls leaves the calls to run (those that are not
// blocked, rejected or denied: they are answered in the step) for
// RunCall, which runs each one, and returns them. A batch that delegates
// to a sub-agent or to a tool of tool.Meta.Delegates runs in the step.
func (r *Runner) StepSessionCalls(ctx context.Context, id string) ([]*session.Event, []DeferredCall, error) {
	hd, err := r.holdFor(ctx, id, nil)
	if err != nil {
		return nil, nil, err
	}
	hd.deferCalls = true
	events, err := r.stepHeld(ctx, hd)
	if err != nil {
		return events, nil, err
	}
	r.stepping.mu.Lock()
	b := hd.batch
	r.stepping.mu.Unlock()
	if b == nil {
		return events, nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	calls := make([]DeferredCall, 0, len(b.jobs))
	for i, j := range b.jobs {
		if b.state[i] != callWaiting {
			continue
		}
		c := DeferredCall{ID: j.call.ID, Name: j.call.Name, Attempt: j.attempt}
		if d := b.dels[i]; d != nil {
			c.Child = &ChildRun{SessionID: d.childID, RunID: b.child[i], Agent: d.target}
		}
		calls = append(calls, c)
	}
	return events, calls, nil
}

// RunCall runs the tool call callID of session id (of ctx's tenant), left
// by this runner's StepSessionCalls: it announces the call, runs the tool
// and commits its result. The tool's context ends with ctx or with the
// run (a cancellation). A call this runner does not hold — its step ran
// elsewhere, another RunCall took it, or it was given up — is an error
// of code not_held: the session's next step, anywhere, runs it if it has
// to.
func (r *Runner) RunCall(ctx context.Context, id, callID string) (CallOutcome, error) {
	k := keyOf(ctx, id)
	r.stepping.mu.Lock()
	var b *callBatch
	if hd := r.stepping.holds[k]; hd != nil {
		b = hd.batch
	}
	r.stepping.mu.Unlock()
	notHeld := &Error{Kind: FailState, Code: CodeNotHeld,
		Msg: fmt.Sprintf("tool call %s of session %s is not waiting to run in this process (its step ran elsewhere, or the call was run or given up)", callID, id)}
	if b == nil {
		return CallOutcome{}, notHeld
	}
	if err := ctx.Err(); err != nil {
		return CallOutcome{}, err // the call stays for another RunCall, or is given up
	}
	b.mu.Lock()
	i := -1
	for n, j := range b.jobs {
		if j.call.ID == callID && b.state[n] == callWaiting {
			i = n
		}
	}
	if i < 0 {
		b.mu.Unlock()
		return CallOutcome{}, notHeld
	}
	if b.err != nil || b.ctx.Err() != nil || b.hd.h.interrupted() != "" && b.dels[i] == nil {
		// The run stops (or its store failed): the call is not begun.
		b.state[i] = callGivenUp
		b.end()
		b.mu.Unlock()
		return CallOutcome{}, nil
	}
	j := b.jobs[i]
	b.state[i], b.running = callRunning, b.running+1
	x := b.x
	if d := b.dels[i]; d != nil {
		return r.collectChild(ctx, b, i, d)
	}
	tc := session.ToolCall{CallID: j.call.ID, Name: j.call.Name, Arguments: j.call.Arguments, Rule: j.rule}
	if j.attempt > 1 {
		tc.Attempt = j.attempt
	}
	emit(x, tc)
	cctx, ccancel := afterEnd(ctx) // the announcement is the run's, not the caller's
	err := x.Commit(cctx)
	ccancel()
	if err == nil {
		// The calls are side effects: only the session's owner may make them.
		err = x.lease.check(ctx)
	}
	if err != nil {
		b.fail(err)
		b.state[i], b.running = callGivenUp, b.running-1
		b.end()
		b.mu.Unlock()
		return CallOutcome{}, err
	}
	b.mu.Unlock()

	tctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(b.ctx, func() { cancel(context.Cause(b.ctx)) })
	o := x.runTool(tctx, b.info, j)
	stop()
	cancel(nil)

	b.mu.Lock()
	defer b.mu.Unlock()
	out := CallOutcome{}
	switch {
	case o.canceled && b.ctx.Err() == nil:
		// Canceled by the caller's context, not with the run: nothing to
		// store, and the caller is told (the session's next step runs
		// the call again, by the usual rules).
		err = context.Cause(ctx)
	case o.canceled:
		// Canceled with the run before it had an outcome: nothing to
		// store; the run stops.
	case b.err != nil:
		if storeRefusal(b.err) {
			x.holdResult(o.res, o.attempt) // for a revival here (revive.go)
		}
		err = b.err
	default:
		emit(x, o.res)
		x.ranCall(o.res.CallID, o.attempt)
		cctx, ccancel := afterEnd(ctx)
		if err = x.Commit(cctx); err != nil {
			b.fail(err)
		} else {
			out = CallOutcome{Ran: true, OK: o.res.OK, Error: preview(o.res.Error)}
		}
		ccancel()
	}
	b.state[i], b.running = callDone, b.running-1
	b.end()
	return out, err
}

// add adds job j to the batch: a tool call, or a delegation d.
func (b *callBatch) add(j toolJob, d *delegation) {
	b.jobs = append(b.jobs, j)
	b.state = append(b.state, callWaiting)
	b.dels = append(b.dels, d)
	b.child = append(b.child, "")
	b.ended = append(b.ended, false)
	b.seen = append(b.seen, -1)
}

// beginChild begins the turn of delegation d's child (run_started,
// committed) and lets go of its session, for the engine to run; it
// returns the run's id, or "" when the turn could not begin (the call is
// then answered with the failure).
func (x *Exec) beginChild(ctx context.Context, d *delegation) string {
	parent := &session.ParentRef{SessionID: x.st.SessionID, CallID: d.job.call.ID}
	cctx := x.childContext(ctx)
	st, err := x.r.Begin(cctx, d.childID, Input{Text: d.task, Agent: d.target, Parent: parent})
	x.r.LetGo(cctx, d.childID)
	if err != nil {
		emit(x, session.SubagentError{CallID: d.job.call.ID, ChildSession: d.childID, Code: AsError(err).ErrorCode(), Message: err.Error()})
		emit(x, session.ToolResult{CallID: d.job.call.ID, Name: d.job.call.Name, Error: fmt.Sprintf("the sub-agent %s could not run: %v", d.target, err)})
		return ""
	}
	return st.RunID
}

// collectChild records the end of the child's turn of delegation d, job
// i of b, as the call's outcome (a sub-agent waiting for a person makes
// its requests the parent's). The caller holds b.mu, and has marked the
// job running. A child whose turn has not ended — the engine could not
// run it to its end — is given up: the parent's next step follows it.
func (r *Runner) collectChild(ctx context.Context, b *callBatch, i int, d *delegation) (CallOutcome, error) {
	x, runID := b.x, b.child[i]
	b.mu.Unlock()
	st, err := r.Load(ctx, d.childID)
	b.mu.Lock()
	defer b.mu.Unlock()
	out := CallOutcome{}
	switch {
	case runID == "":
		// It could not begin: the step answered the call.
	case err != nil:
		b.state[i], b.running = callGivenUp, b.running-1
		b.end()
		return out, err
	case st.RunID != runID || st.Status == session.StatusRunning || st.Status == session.StatusIdle:
		b.state[i], b.running = callGivenUp, b.running-1
		b.end()
		return out, nil
	default:
		reason := ""
		if st.LastError != nil {
			reason = st.LastError.Code
		}
		o, waiting, derr := x.delegationOutcome(ctx, d, childEnd{status: st.Status, reason: cmp.Or(reason, string(st.Status)),
			final: st.Final, usage: st.RunUsage, lastErr: st.LastError})
		switch {
		case derr != nil:
			b.fail(derr)
			err = derr
		case b.err != nil:
			err = b.err
		default:
			if !waiting && o != nil && !o.canceled {
				emit(x, o.res)
				out = CallOutcome{Ran: true, OK: o.res.OK, Error: preview(o.res.Error)}
			}
			cctx, cancel := afterEnd(ctx)
			if err = x.Commit(cctx); err != nil {
				b.fail(err)
				out = CallOutcome{}
			}
			cancel()
		}
	}
	b.state[i], b.running = callDone, b.running-1
	b.end()
	return out, err
}

// stopChildren asks the children's runs of b's delegations still under
// way to stop as the parent's run does (its handle says how): the engine
// runs them, not this process. Once.
func (b *callBatch) stopChildren(r *Runner) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	h := b.hd.h
	kind, reason := session.ControlCancel, "the parent's run was canceled"
	if why := h.interruptedFor(b.hd.ctx); why != "" {
		kind, reason = session.ControlInterrupt, why
	} else if b.hd.ctx.Err() == nil {
		return // neither: nothing to pass on
	}
	b.stopped = true
	for i, d := range b.dels {
		if d == nil || b.child[i] == "" || b.state[i] == callDone || b.state[i] == callGivenUp {
			continue
		}
		if !r.remote.enter() {
			return
		}
		ctx := session.WithTenant(r.remote.ctx, h.tenant)
		child, run := d.childID, b.child[i]
		go func() {
			defer r.remote.wg.Done()
			_, _ = r.requestControl(ctx, child, run, kind, reason) // not_running: it ended first
		}()
	}
}

// holdBatch keeps b, the calls x's step left, with hd: the session stays
// busy until every call has an outcome or is given up.
func (r *Runner) holdBatch(hd *hold, x *Exec, b *callBatch) {
	b.hd, b.x = hd, x
	b.ctx, b.stop = context.WithCancelCause(hd.ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	// Calls nobody claims are given up after a lease TTL, or at once when
	// the run stops (a cancellation, Close). (Set before the batch is
	// found: LetGoAll may give it up at once.)
	b.ttl = r.leaseTTL
	b.timer = time.AfterFunc(b.ttl, b.tick)
	b.give = context.AfterFunc(b.ctx, func() {
		b.stopChildren(r) // a cancellation: passed on to the children first
		b.giveUp()
	})
	r.stepping.mu.Lock()
	hd.batch = b
	r.stepping.mu.Unlock()
	b.end() // nothing left to run (the children that could not begin)
}

// tick gives up, a lease TTL after the step, the calls nobody claimed —
// and a delegation's once its child's turn was over, or made no progress
// with nobody holding it, at two ticks in a row (the engine's workflow
// stopped, or never began it): while the child's turn goes on, the
// parent's batch waits for it. The parent's next step follows a child
// given up in its step.
func (b *callBatch) tick() {
	b.mu.Lock()
	var kids []int
	for i := range b.state {
		switch {
		case b.state[i] != callWaiting:
		case b.dels[i] == nil || b.child[i] == "":
			b.state[i] = callGivenUp
		default:
			kids = append(kids, i)
		}
	}
	b.end()
	if len(kids) == 0 || b.over {
		b.mu.Unlock()
		return
	}
	x := b.x
	b.mu.Unlock()
	// A child's turn that is over, or that nobody runs (no lease, no new
	// event since the last tick: the engine never began it), counts.
	idle := make([]bool, len(kids))
	seqs := make([]int64, len(kids))
	for n, i := range kids {
		sess, err := x.r.store.GetSession(b.ctx, b.dels[i].childID)
		if err != nil {
			idle[n] = true
			continue
		}
		l := sess.Lease
		leased := l != nil && l.Owner != "" && time.Now().Before(l.Expires)
		seqs[n] = sess.LastSeq
		idle[n] = sess.Status != session.StatusRunning || !leased && sess.LastSeq == b.seen[i]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for n, i := range kids {
		switch {
		case b.state[i] != callWaiting:
		case idle[n] && b.ended[i]:
			b.state[i] = callGivenUp
		default:
			b.ended[i], b.seen[i] = idle[n], seqs[n]
		}
	}
	b.end()
	if !b.over {
		b.timer.Reset(b.ttl)
	}
}

// giveUp gives up the calls not claimed yet.
func (b *callBatch) giveUp() { b.giveUpWaiting(true) }

// giveUpWaiting gives up the calls not claimed yet: all, or those that
// are not a delegation whose child's turn was begun.
func (b *callBatch) giveUpWaiting(all bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.state {
		if b.state[i] == callWaiting && (all || b.dels[i] == nil || b.child[i] == "") {
			b.state[i] = callGivenUp
		}
	}
	if b.x != nil {
		b.end()
	}
}

// fail records a failed commit: the calls still running are canceled.
// The caller holds mu.
func (b *callBatch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
	b.stop(err)
}

// end ends the batch once every call has an outcome or was given up: the
// step it belongs to ends as stepHeld ends a step. The caller holds mu.
func (b *callBatch) end() {
	if b.over || b.running > 0 {
		return
	}
	for _, s := range b.state {
		if s == callWaiting {
			return
		}
	}
	b.over = true
	b.timer.Stop()
	b.give()
	x, hd, r := b.x, b.hd, b.x.r
	r.stepping.mu.Lock()
	hd.batch = nil
	r.stepping.mu.Unlock()
	ctx, cancel := afterEnd(hd.ctx)
	defer cancel()
	err := b.err
	if err == nil && x.st.Status == session.StatusRunning && len(x.st.Calls) == 0 {
		err = x.checkLoops() // the batch is done
	}
	if err == nil {
		err = x.Commit(ctx)
	}
	if err != nil {
		r.stepFailed(ctx, x, err)
	}
	b.stop(nil)
	r.endStep(hd, x)
}
