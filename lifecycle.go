package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/stack"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// The life of a run, top to bottom: a turn (Run, Start) or a resumption
// (Resume, StartResume) begins — the session is claimed in this runner,
// its lease taken in the store, its state loaded — then the loop steps
// until the run stops, and the run finishes: its lease released, its
// claim ended, its handle's outcome recorded.
//
//	Run / Start ─── startTurn ──┐
//	Resume / StartResume ─ startResume ─┤
//	                            begin: claim → lease → load → expire
//	                            drive: loop → step … → finish

// Input is one user turn.
type Input struct {
	Text string
	// Media are images and files that go with Text: blobs the store keeps
	// (session.Blobs: PutBlob), named by their hash; their bytes reach the
	// models that take their type (model.MediaAcceptor), the others get a
	// line describing them.
	Media []model.Media
	// Source names where the input came from (a channel, a user); optional.
	Source string
	// Agent, when set, is the agent the session belongs to: a session that
	// does not exist yet is created for it (so that one call starts a
	// conversation), and a session of another agent is an error.
	Agent string
	// Parent, when set, records the tool call of another session this
	// run works for (a sub-agent's run).
	Parent *session.ParentRef
	// Plan, for an agent with the PlanExecute policy, is the caller's plan
	// (see TaskAgent.ExecutePlan).
	Plan *Plan
	// Overrides change the agent for this run only, recorded in
	// run_started.
	Overrides *Overrides
	// Inputs are the ids of the inbox inputs (session.Inbox) the turn
	// answers: recorded in run_started and marked answered in its
	// commit, which is refused if one was answered already (the gateway
	// sets them).
	Inputs []string
	// ClientTools are tools the caller runs itself (an OpenAI request's
	// tools, an AG-UI front end's): offered to the model beside the
	// agent's for this run, recorded in run_started so a resumed run
	// offers them too. A call of one is not run: it becomes a pending
	// request of kind client_tool, and the run waits until the caller
	// resolves it with the tool's result (Resolution.Result or Text).
	ClientTools []model.ToolSpec
	// TurnID names the turn the run belongs to (the gateway's, see
	// session.RunStarted.TurnID); empty: the run is a turn of its own,
	// named by its run id.
	TurnID string
}

// Overrides change an agent for one run: a plan's step cap (MaxSteps,
// for PlanExecute), and the fields of its profile that are set (Profile),
// rendered into the run's system prompt in place of the agent's.
type Overrides struct {
	MaxSteps int
	Profile  Profile
}

// Run submits input to a session and runs the turn on the calling
// goroutine until it finishes, waits for a human, pauses at a limit, fails
// or is canceled.
//
// Events are yielded after they are committed to the store, except live
// events (Seq 0: tokens, tool-call deltas), which are yielded as the model
// streams. A failure of the run itself is recorded as an error event and a
// run_finished event with status failed, not yielded as an error; the
// sequence yields a non-nil error (its last value) only when the run could
// not start or its events could not be stored.
//
// Leaving the loop early cancels the run, which is recorded with status
// canceled and can be resumed. For a run that goes on whoever watches it,
// use Start, and Watch or Run.Events.
func (r *Runner) Run(ctx context.Context, sessionID string, in Input) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		x, rctx, err := r.startTurn(ctx, sessionID, in, false)
		if err != nil {
			yield(nil, err)
			return
		}
		x.yield, x.live = yield, true
		r.drive(rctx, x)
	}
}

// Start submits input to a session and runs the turn in the background,
// in a goroutine the Runner tracks (Close waits for it). The run outlives
// ctx, which bounds only the start; stop it with Run.Cancel or
// Run.Interrupt. Errors that keep the run from starting (an unknown
// session, one that is busy, waiting or leased elsewhere, empty input) are
// returned here.
func (r *Runner) Start(ctx context.Context, sessionID string, in Input) (*Run, error) {
	x, rctx, err := r.startTurn(ctx, sessionID, in, true)
	if err != nil {
		return nil, err
	}
	return r.background(rctx, x), nil
}

// Reasons of run_resumed.
const (
	ResumeRecovered = "recovered" // the process running the session stopped
	ResumeApproval  = "approval"  // every pending request was resolved
	ResumePause     = "resume"    // a paused run goes on
	ResumeRetry     = "retry"     // a failed, canceled or interrupted run is tried again
	// ResumeStore: the store refused a write of the run, and this
	// process resumes it once the store accepts writes again (revive.go).
	ResumeStore = "store"
)

// Resume continues a session whose run stopped before it finished: after a
// crash (status running), once every pending request is resolved (status
// waiting), after a pause at a limit, or after a failure, cancellation or
// interruption. Completed tool calls are not run again. It runs on the
// calling goroutine; its events, and leaving the loop, are like Run's.
func (r *Runner) Resume(ctx context.Context, sessionID string) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		x, rctx, err := r.startResume(ctx, sessionID, false, resumeOf{})
		if err != nil {
			yield(nil, err)
			return
		}
		x.yield, x.live = yield, true
		if err := x.Commit(rctx); err != nil {
			x.yieldErr(err)
			r.finish(x)
			return
		}
		r.drive(rctx, x)
	}
}

// StartResume is Resume in the background, as Start is Run.
func (r *Runner) StartResume(ctx context.Context, sessionID string) (*Run, error) {
	return r.startResumeBackground(ctx, sessionID, false)
}

func (r *Runner) startResumeBackground(ctx context.Context, sessionID string, recovering bool) (*Run, error) {
	x, rctx, err := r.startResume(ctx, sessionID, true, resumeOf{recovering: recovering})
	if err != nil {
		return nil, err
	}
	if err := x.Commit(rctx); err != nil {
		r.finish(x)
		return nil, err
	}
	return r.background(rctx, x), nil
}

// background runs x's run on a goroutine; the run's claim, which Close
// waits for, covers it. Such a run, stopped by the store's refusal of a
// write, is resumed by this process (revive.go).
func (r *Runner) background(ctx context.Context, x *Exec) *Run {
	h := x.handle
	x.background = true
	go func() {
		stack.Presize()
		r.drive(ctx, x)
	}()
	return h
}

// startTurn begins a turn: the session claimed, leased and loaded, the
// turn-start hooks run, run_started emitted (it is committed with the
// first step's events: one transaction fewer per turn; a crash before that
// commit loses a turn nobody has seen begin). It returns the run's
// context.
func (r *Runner) startTurn(ctx context.Context, id string, in Input, detached bool) (*Exec, context.Context, error) {
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 {
		return nil, nil, &Error{Kind: FailInput, Code: CodeEmptyInput, Msg: "input is empty: no text, no images or files"}
	}
	if hidden(id) {
		return nil, nil, &Error{Kind: FailInput, Code: CodeProtected,
			Msg: fmt.Sprintf("session %s is hidden (an agent's rule log, or a claim): no turn runs in it", id)}
	}
	x, rctx, err := r.beginRun(ctx, id, detached, in.Agent)
	if in.Agent != "" && errors.Is(err, session.ErrNotFound) {
		// Deleted by another process since it ran here: created anew.
		r.cache.take(keyOf(ctx, id))
		x, rctx, err = r.beginRun(ctx, id, detached, in.Agent)
	}
	if err != nil {
		return nil, nil, err
	}
	h := x.handle
	if in.Agent != "" && x.st.Agent != in.Agent {
		return r.abandon(x, &Error{Kind: FailInput, Code: CodeWrongAgent,
			Msg: fmt.Sprintf("session %q belongs to agent %q, not %q", id, x.st.Agent, in.Agent)})
	}
	switch x.st.Status {
	case session.StatusRunning:
		return r.abandon(x, &Error{Kind: FailState, Code: CodeUnfinishedRun,
			Msg: fmt.Sprintf("session %q has an unfinished run (the process running it stopped); resume it first", id)})
	case session.StatusWaiting:
		return r.abandon(x, waitingErr(x.st))
	}
	runID := r.newID()
	h.begins(runID, cmp.Or(in.TurnID, runID), x.st.Seq)
	info := HookInfo{Tenant: x.key.tenant, SessionID: id, RunID: runID, Agent: x.agent.Name, Turn: x.st.Turn + 1}
	if err := x.hooks.turnStart(ctx, info, in.Text); err != nil {
		return r.abandon(x, err)
	}
	var plan json.RawMessage
	if in.Plan != nil {
		if _, ok := x.agent.Policy.(PlanExecute); !ok {
			return r.abandon(x, &Error{Kind: FailInput, Code: CodeBadPlan, Msg: fmt.Sprintf("agent %q does not execute plans (its strategy is not plan_execute)", x.agent.Name)})
		}
		if err := x.agent.checkPlan(in.Plan, true); err != nil {
			return r.abandon(x, err)
		}
		plan, _ = json.Marshal(in.Plan)
	}
	if err := r.checkMedia(rctx, in.Media); err != nil {
		return r.abandon(x, err)
	}
	started := session.RunStarted{Input: in.Text, Media: in.Media, Source: in.Source, Parent: in.Parent, Inputs: in.Inputs, TurnID: cmp.Or(in.TurnID, runID), Engine: r.engineName}
	x.answers = in.Inputs
	if o := in.Overrides; o != nil {
		if o.MaxSteps < 0 {
			return r.abandon(x, &Error{Kind: FailInput, Code: CodeBadOverrides, Msg: fmt.Sprintf("overrides: max_steps %d is negative", o.MaxSteps)})
		}
		started.Overrides = &session.Overrides{MaxSteps: o.MaxSteps}
		if o.Profile != (Profile{}) {
			started.Overrides.Profile, _ = json.Marshal(o.Profile)
		}
	}
	if len(in.ClientTools) > 0 {
		if err := x.agent.CheckClientTools(in.ClientTools); err != nil {
			return r.abandon(x, err)
		}
		started.ClientTools = slices.Clone(in.ClientTools)
	}
	x.emitStart(runID, started)
	if plan != nil {
		emit(x, session.PlanCreated{Plan: plan, Source: "caller"})
	}
	x.lease.watch(h.cancel)
	return x, rctx, nil
}

// resumeOf says which resumption startResume begins: one a caller asked
// for (the zero value), Recover's (recovering), or this process's
// revival of stalled, a run the store's refusal of a write stopped.
type resumeOf struct {
	recovering bool
	stalled    *stalledRun
	waiting    bool // only a waiting run (BeginResume: an engine's expiry)
}

// startResume begins a resumption: run_resumed emitted, or, for a session
// that crashed its process too often without progress, its failure.
// Recover leaves a sub-agent's session to the run of its parent (code
// busy: another run resumes it); a revival resumes only the run that
// stalled, still running and not a sub-agent's, and records first the
// tool results it had in hand.
func (r *Runner) startResume(ctx context.Context, id string, detached bool, how resumeOf) (*Exec, context.Context, error) {
	x, rctx, err := r.beginRun(ctx, id, detached, "")
	if err != nil {
		return nil, nil, err
	}
	h := x.handle
	st := x.st
	if how.waiting && st.Status != session.StatusWaiting {
		return r.abandon(x, &Error{Kind: FailState, Code: CodeNothingToResume,
			Msg: fmt.Sprintf("session %q is %s, not waiting: nothing of its requests to expire", id, st.Status)})
	}
	var reason string
	switch st.Status {
	case session.StatusRunning:
		reason = ResumeRecovered
	case session.StatusWaiting:
		if len(st.Requests) > 0 {
			return r.abandon(x, waitingErr(st))
		}
		reason = ResumeApproval
	case session.StatusPaused:
		reason = ResumePause
	case session.StatusFailed, session.StatusCanceled, session.StatusInterrupted:
		reason = ResumeRetry
	default:
		return r.abandon(x, &Error{Kind: FailState, Code: CodeNothingToResume,
			Msg: fmt.Sprintf("session %q has nothing to resume (status %s)", id, st.Status)})
	}
	if s := how.stalled; s != nil {
		if st.Status != session.StatusRunning || st.RunID != s.runID || st.Parent != nil {
			// Canceled by a person meanwhile, or finished (or resumed
			// again) by another process: not the run that stalled. Or
			// a sub-agent's, which its parent's resumption resumes.
			return r.abandon(x, &Error{Kind: FailState, Code: CodeNothingToResume,
				Msg: fmt.Sprintf("session %q's run %s is not this process's to resume", id, s.runID)})
		}
		reason = ResumeStore // not a crash: no crash loop to count
	}
	if how.recovering && st.Parent != nil {
		// A sub-agent's run goes on with its parent's: the parent's
		// resumption resumes it and takes its answer, exactly once.
		return r.abandon(x, &Error{Kind: FailState, Code: CodeBusy,
			Msg: fmt.Sprintf("session %q is a sub-agent's, resumed by its parent %s", id, st.Parent.SessionID)})
	}
	h.begins(st.RunID, cmp.Or(st.TurnID, st.RunID), st.Seq)
	if err := x.hooks.turnStart(ctx, x.info(), ""); err != nil {
		return r.abandon(x, err)
	}
	if reason == ResumeRecovered && r.maxRecov > 0 && st.Recoveries >= r.maxRecov {
		// Each of the last resumptions died before the run got anywhere:
		// another would most likely crash its process again.
		e := &Error{Kind: FailState, Code: CodeCrashLoop, Msg: fmt.Sprintf(
			"session %s was resumed %d times after its process stopped, without progress in between; "+
				"it is stopped so as not to crash another process (agentrt resume %s tries again)", id, st.Recoveries, id)}
		emit(x, session.Error{Code: e.ErrorCode(), Message: e.Error()})
		x.End(session.StatusFailed, CodeCrashLoop)
		return x, rctx, nil
	}
	emit(x, session.RunResumed{Reason: reason, From: st.Status, Engine: r.engineName})
	if how.stalled != nil {
		x.recordHeld(how.stalled.results)
	}
	x.lease.watch(h.cancel)
	return x, rctx, nil
}

// recordHeld records the tool results a stalled run had in hand and could
// not store, for the calls that still wait for them in the same attempt:
// the calls are not run again.
func (x *Exec) recordHeld(results []heldResult) {
	for _, hr := range results {
		if c := x.st.call(hr.res.CallID); c != nil && c.Started && !c.Done && c.Attempts == hr.attempt {
			emit(x, hr.res)
		}
	}
}

// beginRun begins a run of session id: its handle and context, the
// session claimed, leased and loaded (created for agent if it does not
// exist and agent is not empty: see begin). abandon undoes it all, for a
// run that turns out not to be possible.
func (r *Runner) beginRun(ctx context.Context, id string, detached bool, agent string) (*Exec, context.Context, error) {
	rctx, h := r.newRun(ctx, id, detached)
	x, err := r.begin(ctx, id, h, false, agent)
	if err != nil {
		h.cancel(nil)
		h.giveUp(err)
		if h.parent != nil {
			h.parent.disown(h)
		}
		return nil, nil, err
	}
	return x, rctx, nil
}

// abandon undoes beginRun and returns err. The handle, which others may
// have found while the session was claimed, ends with the session's
// outcome as stored (and err).
func (r *Runner) abandon(x *Exec, err error) (*Exec, context.Context, error) {
	h := x.handle
	h.setErr(err)
	r.finish(x)
	h.cancel(nil)
	if h.parent != nil {
		h.parent.disown(h)
	}
	return nil, nil, err
}

// begin claims session id for h (nil for a short write), takes its lease
// and loads it; on success the caller owns x and ends with r.finish(x).
// With agent not empty, a session that does not exist is created for it,
// in the write that takes its lease (see ensureSession), once the session
// is claimed: no other run of this runner can come between. With
// waitLease, a lease another process holds is waited for, as long as ctx
// allows. Requests whose deadline passed get their default decisions.
func (r *Runner) begin(ctx context.Context, id string, h *Run, waitLease bool, agent string) (*Exec, error) {
	k := keyOf(ctx, id)
	if err := r.reg.claim(k, h); err != nil {
		return nil, err
	}
	if h != nil {
		r.control.watch()
	}
	lease, st, err := r.take(ctx, k, h, waitLease, agent)
	if err != nil {
		r.release(k)
		return nil, err
	}
	a, err := r.agent(st.Agent)
	if err != nil {
		lease.stop()
		r.release(k)
		return nil, err
	}
	var spare *topic
	if h != nil {
		spare = &h.topic
	}
	x := r.newExec(a, st)
	x.lease, x.handle, x.topic, x.key = lease, h, r.hub.retain(k, spare), k
	x.fence = lease.token()
	// The agent's standing decisions, read if a call needs one.
	st.agentRules, st.rulesFrom, st.rulesCtx = nil, r, ctx
	if err := x.expire(ctx); err != nil {
		x.handle = nil
		r.finish(x)
		return nil, err
	}
	return x, nil
}

// take takes the lease of claimed session k and loads its state: in one
// write when it may create the session (agent not empty), else by
// acquiring the lease, then loading (from the cache when it is current).
func (r *Runner) take(ctx context.Context, k skey, h *Run, waitLease bool, agent string) (*leaseKeeper, *State, error) {
	var into *leaseKeeper
	if h != nil {
		into = &h.lease
	}
	var c *created
	if agent != "" {
		var err error
		if c, err = r.ensureSession(ctx, k.id, agent); err != nil {
			return nil, nil, err
		}
	}
	var (
		lease *leaseKeeper
		st    *State
		err   error
	)
	switch {
	case c != nil && c.new:
		// Created leased: nobody else can have written to it since (a
		// state cached of a session of that id was deleted with it).
		r.cache.take(k)
		lease = r.keepLease(ctx, c.lease, into)
		st, err = r.newState(k.id, c.agent)
	case c != nil:
		lease = r.keepLease(ctx, c.lease, into)
		st, err = r.loadCached(ctx, k, c.sess)
	default:
		if lease, err = r.acquireLease(ctx, k.id, waitLease, into); err != nil {
			return nil, nil, err
		}
		st, err = r.loadCached(ctx, k, nil)
	}
	if err != nil {
		lease.stop()
		return nil, nil, err
	}
	return lease, st, nil
}

// drive runs x's run until it stops, then ends it.
func (r *Runner) drive(ctx context.Context, x *Exec) {
	if r.engine != nil && x.st.Status == session.StatusRunning {
		// The engine's workers step it — a sub-agent's run too: its
		// session's own, while the parent's step waits for its answer.
		r.handOff(ctx, x)
		return
	}
	defer r.finish(x)
	r.loop(ctx, x)
}

// loop steps until the run stops. Its steps commit lazily (see step).
func (r *Runner) loop(ctx context.Context, x *Exec) {
	x.lazy = true
	for x.st.Status == session.StatusRunning {
		if reason := x.handle.interruptedFor(ctx); reason != "" {
			x.interrupt(ctx, reason)
			return
		}
		if err := r.stepChecked(ctx, x); err != nil {
			r.stepFailed(ctx, x, err)
			return
		}
		if x.stopped && x.st.Status == session.StatusRunning {
			x.fail(ctx, &Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the caller stopped reading events"})
			return
		}
	}
}

// stepFailed ends the run after a step failed with err.
func (r *Runner) stepFailed(ctx context.Context, x *Exec, err error) {
	if reason := x.handle.interrupted(); reason != "" && (ctx.Err() == nil || errors.Is(context.Cause(ctx), errInterrupted)) {
		// The model call Interrupt abandoned, or a failure at the
		// moment of the interruption: either way the turn ends
		// interrupted (unless the store failed, when nothing can be
		// written).
		if re := AsError(err); re.Kind != FailStore && re.Code != CodeLeaseLost {
			x.interrupt(ctx, reason)
			return
		}
	}
	var pe *panicError
	if errors.As(err, &pe) {
		// What the step applied before it panicked may not be coherent:
		// the run goes on from what the store holds, and fails there.
		if rerr := x.reload(ctx); rerr != nil {
			x.yieldErr(rerr)
			return
		}
	}
	x.fail(ctx, err)
}

// stepChecked is step, failing a step that records nothing while the run
// goes on: a policy that finds nothing to do would otherwise loop forever.
func (r *Runner) stepChecked(ctx context.Context, x *Exec) error {
	before := x.st.Seq
	ins, err := r.step(ctx, x)
	if err != nil {
		return err
	}
	if x.st.Status == session.StatusRunning && x.st.Seq == before && x.deferred == nil {
		return &Error{Kind: FailPolicy, Code: CodeNoProgress,
			Msg: fmt.Sprintf("the policy chose %s, which changed nothing; it would choose it again forever", ins.Kind)}
	}
	return nil
}

// step decides and executes one instruction and commits its events.
//
// In a lazy run (x.lazy, the run loop's) a built-in executor's events may
// stay pending when the run goes on: the next step commits them with its
// own, and every built-in executor commits before it does anything with
// an effect (a model call, a tool call) or ends the run. A turn of three
// tool rounds so commits 8 times instead of 15, and nothing that happened
// outside the process goes unrecorded before the next thing does. Events
// are pending only while the run computes: a policy other than React, and
// an executor of the caller's, find every event committed, as a custom
// executor's side effect must follow a durable record.
//
// A policy or an executor that panics fails the step (code panic, with
// the stack), not the process.
func (r *Runner) step(ctx context.Context, x *Exec) (ins Instruction, err error) {
	if err := ctx.Err(); err != nil {
		return Instruction{}, err
	}
	p := x.agent.Policy
	if p == nil {
		p = React{}
	}
	if _, ok := p.(React); !ok {
		if err := x.Commit(ctx); err != nil {
			return Instruction{}, err
		}
	}
	defer func() {
		if v := recover(); v != nil {
			pe := &panicError{what: "the " + string(ins.Kind) + " executor", value: v, stack: debug.Stack()}
			if ins.Kind == "" {
				pe.what = "the policy"
			}
			err = &Error{Kind: FailInternal, Code: CodePanic, Err: pe}
		}
	}()
	ins, err = p.Next(ctx, x.agent, x.st)
	if err != nil {
		return ins, &Error{Kind: FailPolicy, Msg: "policy", Err: err}
	}
	if ins.Kind == KindWait {
		x.End(session.StatusWaiting, "input_required")
		return ins, x.Commit(ctx)
	}
	if (ins.Kind == KindCallModel || ins.Kind == KindCallTools) && x.pauseOverBudget(ins) {
		return ins, x.Commit(ctx)
	}
	exec, builtin := r.executor(x.agent, ins.Kind)
	if exec == nil {
		return ins, &Error{Kind: FailConfig, Code: CodeNoExecutor, Msg: fmt.Sprintf("no executor for instruction %q", ins.Kind)}
	}
	if !builtin {
		if err := x.Commit(ctx); err != nil {
			return ins, err
		}
	}
	if err := exec(ctx, x, ins); err != nil {
		return ins, err
	}
	if ins.Kind == KindCallTools && x.st.Status == session.StatusRunning && len(x.st.Calls) == 0 { // the batch is done
		if err := x.checkLoops(); err != nil {
			return ins, err
		}
	}
	if x.lazy && builtin && x.end == "" && x.st.Status == session.StatusRunning {
		return ins, nil
	}
	return ins, x.Commit(ctx)
}

// panicError is a policy's or an executor's panic, recovered.
type panicError struct {
	what  string
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.what, e.value) }

// Unwrap returns the value the code panicked with, when it is an error.
func (e *panicError) Unwrap() error {
	err, _ := e.value.(error)
	return err
}

// executor returns the executor of instructions of kind k for a, and
// whether it is a built-in one.
func (r *Runner) executor(a *Agent, k Kind) (Executor, bool) {
	if e := a.Executors[k]; e != nil {
		return e, false
	}
	if e := r.executors[k]; e != nil {
		return e, false
	}
	e := builtinExecutor(k)
	return e, e != nil
}

// interrupt ends the run at a safe point (between steps, or after an
// abandoned model call): see endInterrupted.
func (x *Exec) interrupt(ctx context.Context, reason string) {
	x.recordControl()
	x.endInterrupted(reason)
	cctx, cancel := afterEnd(ctx)
	defer cancel()
	if err := x.Commit(cctx); err != nil {
		x.yieldErr(err)
	}
}

// finish ends what begin started: the lease is released, the session is
// free again in this runner, the run's outcome is recorded, and x goes
// back to the pool. The runner's count of the claim ends last: Close
// returns only once the handle says how the run ended.
func (r *Runner) finish(x *Exec) {
	x.handle.letGo()
	r.observeEnd(x)
	// The run's result is read from its state before the state goes to
	// the cache, where the session's next run may take it at once.
	x.handle.settle(x)
	if len(x.pending) == 0 && !x.dirty {
		// Everything this run applied is in the store: keep the state for
		// the session's next run.
		r.cache.put(x.key, x.st)
	}
	x.lease.stop()
	if cause := x.refusedByStore(); cause != nil {
		// The store refused the run's write: the watchers here would
		// wait for an end that is not coming. A background run is
		// resumed by this process once the store accepts writes.
		revived := x.background && r.revive.stall(x.key, x.st.RunID, x.inHand, cause)
		if !revived {
			r.revive.refused(cause)
		}
		x.topic.fail(stalledError(x, cause, revived))
	}
	r.hub.release(x.topic)
	r.reg.unclaim(x.key)
	if h := x.handle; h != nil {
		h.finish()
		h.cancel(nil)
	}
	r.putExec(x)
	r.reg.done()
}

func waitingErr(st *State) error {
	ids := make([]string, len(st.Requests))
	for i, q := range st.Requests {
		ids[i] = q.ID
	}
	return &Error{Kind: FailState, Code: CodeWaiting,
		Msg: fmt.Sprintf("session %q is waiting for a human decision on request %s", st.SessionID, strings.Join(ids, ", "))}
}

// checkMedia checks a turn's media before the turn starts: each names a
// blob the store keeps (for ctx's tenant), with its type and size.
func (r *Runner) checkMedia(ctx context.Context, media []model.Media) error {
	if len(media) == 0 {
		return nil
	}
	bs, ok := r.store.(session.Blobs)
	if !ok {
		return &Error{Kind: FailInput, Code: CodeBadPart, Msg: fmt.Sprintf("the store (%T) keeps no blobs: a turn cannot take images or files", r.store)}
	}
	for i, m := range media {
		if err := session.CheckBlobHash(m.Hash); err != nil {
			return &Error{Kind: FailInput, Code: CodeBadPart, Msg: fmt.Sprintf("media %d: %v", i+1, err)}
		}
		b, _, err := bs.GetBlob(ctx, m.Hash)
		if err != nil {
			if errors.Is(err, session.ErrNotFound) {
				return &Error{Kind: FailInput, Code: CodeBadPart, Msg: fmt.Sprintf("media %d: the store keeps no blob %s (PutBlob it first)", i+1, m.Hash)}
			}
			return &Error{Kind: FailStore, Msg: "read blob " + m.Hash, Err: err}
		}
		if m.Type != b.Type || m.Size != b.Size {
			return &Error{Kind: FailInput, Code: CodeBadPart,
				Msg: fmt.Sprintf("media %d: blob %s is %s of %d bytes, not %s of %d", i+1, m.Hash, b.Type, b.Size, m.Type, m.Size)}
		}
	}
	return nil
}
