package agentrt

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Exec is an executor's view of the run in progress: the state, the agent
// and the way to report progress. Events emitted with Emit are applied to
// the state at once and written to the store by Commit (or by the runner
// when the executor returns), in one transaction, before anyone sees them.
//
// An Exec is used by one goroutine at a time: the run's. An executor that
// starts goroutines (CallTools runs calls concurrently) calls Exec's
// methods only from the run's goroutine, and joins its goroutines before
// it returns.
type Exec struct {
	execRun

	// Buffers reused from one step to the next and, through the Runner's
	// pool, from one run to the next: a turn commits a dozen times and
	// calls the model several times. An Exec goes back to the pool only
	// when its run has ended and every goroutine it started has returned.
	pendingBuf [8]*session.Event // pending's first backing array
	ranBuf     [4]callAttempt    // ran's first backing array
	// announced's first backing array: a reply that streams its calls
	// announces their ids (liveCallID) with no allocation of its own.
	announcedBuf [4]announcedID
	commit       session.Commit
	snapshot     session.Snapshot
	msgs         []model.Message
	req          model.Request
	asm          model.Assembler
}

// execRun is the part of an Exec that belongs to one run. It is reset as
// a whole when a pooled Exec starts a run: the buffers beside it are
// larger, and copying them would cost write barriers for nothing.
type execRun struct {
	r      *Runner
	agent  *Agent
	st     *State
	hooks  hookSet
	yield  func(*session.Event, error) bool
	live   bool // yield live token events
	failed bool // an error was already yielded

	handle *Run         // the run's handle: cancel, interrupt, outcome
	lease  *leaseKeeper // the session's lease; nil without a Leaser
	fence  int64        // the lease's token, which commits carry (renewals keep it)
	key    skey         // the session's tenant and id
	topic  *topic       // the session's watchers in this process

	pending   []*session.Event
	last      *session.Event
	committed int64 // the seq of the last committed event
	// stored and storedReason are the session's status, and its last
	// run_finished's reason, as the store has them: what the run's
	// handle reports.
	stored       session.Status
	storedReason string
	controlled   bool // the control request the run acts on is recorded
	// answers are the inbox inputs the next commit answers (see
	// Input.Inputs).
	answers []string
	end     session.Status
	reason  string
	stopped bool // the consumer stopped reading
	dirty   bool // a commit failed: the state is ahead of the store
	lazy    bool // built-in steps may leave their events to the next commit (see Runner.step)
	quiet   bool // the model call under way is not the answer: no live tokens
	// background: the run goes on in the background (Runner.background),
	// and this process resumes it if the store refuses its write.
	background bool
	// deferCalls: CallTools leaves its runnable calls to RunCall
	// (StepSessionCalls), in deferred.
	deferCalls bool
	deferred   *callBatch
	// held: a step of a session driven step by step (stepping.go), which
	// other processes may steer (steer.go).
	held bool
	// ran are the attempts of the calls whose results are pending, not
	// yet committed; inHand the results a failed commit could not
	// store, which a revival of the run records (revive.go).
	ran    []callAttempt
	inHand []heldResult
	// finishPair, once a reply streamed a tool-call delta, holds the
	// model_finished that reply ends with (see liveToolCallDelta).
	finishPair *eventPair[session.ToolCallDelta, session.ModelFinished]
	// announced are the call ids the reply's streamed fragments carried,
	// as live events said them (liveCallID), in order: model_finished
	// gives its calls the same (normalizeCalls).
	announced []announcedID

	checked   int       // st.Messages[:checked] was found consistent in this run
	stamp     time.Time // the clock reading of the last Commit, if it read one
	base      time.Time // the run's first clock reading, with its monotonic part (see now)
	baseUTC   time.Time // base in UTC, without it
	streamErr error     // the model's error, set in stream's loop body
}

func (r *Runner) newExec(a *Agent, st *State) *Exec {
	x, _ := r.execs.Get().(*Exec)
	if x == nil {
		x = new(Exec)
	}
	x.execRun = execRun{r: r, agent: a, st: st, committed: st.Seq, stored: st.Status,
		hooks: hookSet{h: r.hooksOf(a)}}
	x.pending = x.pendingBuf[:0]
	x.ran = x.ranBuf[:0]
	x.announced = x.announcedBuf[:0]
	return x
}

// hooksOf returns a's hooks merged with the runner's.
func (r *Runner) hooksOf(a *Agent) *Hooks {
	if h := r.agentHooks[a.Name]; h != nil && r.agents[a.Name] == a {
		return h
	}
	return merged(&r.hooks, &a.Hooks)
}

// maxPooledMsgs is the longest request buffer an Exec keeps in the pool.
const maxPooledMsgs = 256

// putExec returns x to the pool, keeping only its request buffer (cleared,
// so that it holds on to no conversation). x must not be used afterwards,
// and nothing may still reach it.
func (r *Runner) putExec(x *Exec) {
	msgs := x.msgs
	clear(msgs[:cap(msgs)])
	x.msgs = nil
	if cap(msgs) <= maxPooledMsgs {
		x.msgs = msgs[:0]
	}
	clear(x.pendingBuf[:])
	clear(x.ranBuf[:])
	clear(x.announcedBuf[:])
	x.execRun = execRun{}
	x.req = model.Request{}
	// The last commit's events and the last reply are the conversation's
	// too (pending's array, if it outgrew pendingBuf; the reply's text and
	// tool calls).
	x.commit = session.Commit{}
	x.asm = model.Assembler{}
	r.execs.Put(x)
}

// State returns the state. Executors read it; they change it only through
// events.
func (x *Exec) State() *State { return x.st }

// Agent returns the agent being run.
func (x *Exec) Agent() *Agent { return x.agent }

// Now returns the runner's clock reading.
func (x *Exec) Now() time.Time { return x.now() }

// now reads the runner's clock. With the default clock (time.Now), only
// the first reading of a run reads the wall clock; later ones add the
// monotonic time elapsed since, which costs half as much (one clock read
// instead of two, some thirty times a turn) and cannot go backwards.
// base keeps its monotonic reading for time.Since, which otherwise reads
// both clocks; UTC drops it, hence the two fields.
func (x *Exec) now() time.Time {
	if !x.r.wallClock {
		return x.r.now()
	}
	if x.base.IsZero() {
		x.base = time.Now()
		x.baseUTC = x.base.UTC() // events are stamped in UTC
		return x.baseUTC
	}
	return x.baseUTC.Add(time.Since(x.base))
}

// NewID returns a fresh id from the runner's id source.
func (x *Exec) NewID() string { return x.r.newID() }

func (x *Exec) info() HookInfo {
	return HookInfo{Tenant: x.key.tenant, SessionID: x.st.SessionID, RunID: x.st.RunID, Agent: x.agent.Name, Turn: x.st.Turn, Round: x.st.Round}
}

// initEvent fills in e's envelope for payload d, at time t.
func (x *Exec) initEvent(e *session.Event, d session.Data, t time.Time) {
	*e = session.Event{
		V: session.SchemaVersion, SessionID: x.st.SessionID, RunID: x.st.RunID, Turn: x.st.Turn,
		Type: d.EventType(), Time: t, Agent: x.agent.Name, Data: d,
	}
}

// eventWith is an event and its payload in one allocation. A turn emits
// some twenty events; allocating each with its payload halves those
// allocations at no cost in memory held, since the payload lives exactly
// as long as its event (Data points into the same object).
type eventWith[T any] struct {
	ev   session.Event
	data T
}

// newEvent returns an event carrying a copy of d, made at time t. It is
// what the built-in executors use; Emit and Live, for payloads made
// elsewhere, allocate the event alone.
func newEvent[T any, P interface {
	*T
	session.Data
}](x *Exec, d T, t time.Time) *session.Event {
	ev := session.Event{
		V: session.SchemaVersion, SessionID: x.st.SessionID, RunID: x.st.RunID, Turn: x.st.Turn,
		Time: t, Agent: x.agent.Name,
	}
	// One composite literal, so that the compiler initializes the new
	// object without write barriers.
	p := &eventWith[T]{ev: ev, data: d}
	p.ev.Data = P(&p.data)
	p.ev.Type = p.ev.Data.EventType()
	return &p.ev
}

// eventPair is two events allocated together: a step that emits two
// events at once (a round's round_started and model_started), or one
// event now and one it will surely emit later (a call's tool_call and its
// tool_result), pays one allocation for both. The pair lives as long as
// either event, which belong to the same step of the log.
type eventPair[A, B any] struct {
	a eventWith[A]
	b eventWith[B]
}

// newPair returns a pair whose first event carries a, made now (stamped
// at commit), and whose second is not yet made (see fill).
func newPair[A, B any, PA interface {
	*A
	session.Data
}](x *Exec, a A) *eventPair[A, B] {
	p := &eventPair[A, B]{a: eventWith[A]{data: a}}
	x.initEvent(&p.a.ev, PA(&p.a.data), time.Time{})
	return p
}

// fill makes the pair's second event carry b, at time t (zero: stamped
// at commit).
func fill[A, B any, PB interface {
	*B
	session.Data
}](x *Exec, p *eventPair[A, B], b B, t time.Time) *session.Event {
	p.b.data = b
	x.initEvent(&p.b.ev, PB(&p.b.data), t)
	return &p.b.ev
}

// emit is Emit for a built-in payload, stamped with the clock's reading.
func emit[T any, P interface {
	*T
	session.Data
}](x *Exec, d T) {
	x.add(newEvent[T, P](x, d, time.Time{}))
}

// Emit records an event: it is applied to the state now, and committed
// (stamped with the commit's time) by the next Commit.
func (x *Exec) Emit(d session.Data) {
	e := new(session.Event)
	x.initEvent(e, d, time.Time{})
	x.add(e)
}

// add numbers e, applies it to the state and queues it for Commit.
func (x *Exec) add(e *session.Event) {
	e.Seq = x.st.Seq + 1
	if err := x.st.Apply(e); err != nil {
		// Apply fails only on an inconsistent log, which Emit cannot make,
		// or in a policy's own state, which is a bug of the policy.
		panic(err)
	}
	x.pending = append(x.pending, e)
}

func (x *Exec) emitStart(runID string, d session.RunStarted) {
	e := newEvent(x, d, time.Time{})
	e.Seq = x.st.Seq + 1
	e.RunID = runID
	e.Turn = x.st.Turn + 1
	if err := x.st.Apply(e); err != nil {
		panic(err)
	}
	x.pending = append(x.pending, e)
}

// Live yields a live-only event (a token) without storing it.
func (x *Exec) Live(d session.Data) {
	if !x.wantsLive() {
		return
	}
	e := new(session.Event)
	x.initEvent(e, d, x.now())
	x.yieldLive(e)
}

// wantsLive reports whether anyone reads live events: the caller of Run,
// or a watcher in this process.
func (x *Exec) wantsLive() bool {
	return !x.quiet && (x.live && !x.stopped || x.topic.watched())
}

// liveToken is Live for a token, which it allocates only when someone
// reads live events.
func (x *Exec) liveToken(text string) {
	if x.wantsLive() {
		x.yieldLive(newEvent(x, session.Token{Text: text}, x.now()))
	}
}

// liveToolCallDelta is Live for a fragment of a streamed tool call; like
// liveToken, it allocates only when someone reads live events. d is
// copied: a provider reuses its chunks' deltas.
func (x *Exec) liveToolCallDelta(d *model.ToolCallDelta) {
	if !x.wantsLive() {
		return
	}
	delta := session.ToolCallDelta{Index: d.Index, CallID: x.liveCallID(d), Name: d.Name, Arguments: d.Arguments}
	if x.finishPair == nil {
		// The reply's first delta, and the model_finished it surely ends
		// with (Complete fills it in), in one allocation: most replies
		// with a call stream it in one piece.
		p := newPair[session.ToolCallDelta, session.ModelFinished](x, delta)
		p.a.ev.Time = x.now()
		x.finishPair = p
		x.yieldLive(&p.a.ev)
		return
	}
	x.yieldLive(newEvent(x, delta, x.now()))
}

// announcedID is the id a streamed call's fragments carry: the model's
// (model), or, when that one is taken (normalizeCalls), the call's own.
type announcedID struct {
	index     int
	model, id string
}

// liveCallID is the call id fragment d says, by the rule normalizeCalls
// applies to the reply's calls: the model's, unless an earlier call of
// the reply or of the session's history has it.
func (x *Exec) liveCallID(d *model.ToolCallDelta) string {
	if d.ID == "" {
		return ""
	}
	taken := x.st.callIDTaken(d.ID)
	for _, a := range x.announced {
		if a.index == d.Index {
			return a.id
		}
		taken = taken || a.id == d.ID
	}
	id := d.ID
	if taken {
		id = freshCallID(x.st.Seq+1, d.Index, func(id string) bool {
			return x.st.callIDTaken(id) || slices.ContainsFunc(x.announced, func(a announcedID) bool { return a.id == id })
		})
	}
	x.announced = append(x.announced, announcedID{index: d.Index, model: d.ID, id: id})
	return id
}

// livePulse is Live for a waiting pulse.
func (x *Exec) livePulse() {
	if x.wantsLive() {
		x.yieldLive(newEvent(x, session.Token{Pulse: true}, x.now()))
	}
}

func (x *Exec) yieldLive(e *session.Event) {
	x.topic.publish(e, x.committed)
	if x.live && !x.stopped && !x.yield(e, nil) {
		x.stopped = true
	}
}

// End makes the next Commit end the run with status (adding run_finished
// and a state snapshot).
func (x *Exec) End(status session.Status, reason string) {
	x.end, x.reason = status, reason
}

// Commit writes the emitted events in one transaction and then yields them.
// With ctx ended already it writes nothing and returns ctx's error: the
// events stay pending for the next Commit.
func (x *Exec) Commit(ctx context.Context) error {
	if err := ctx.Err(); err != nil && (len(x.pending) > 0 || x.end != "") {
		// Canceled before anything was written: the events stay pending,
		// for the commit that records how the run stopped (made with a
		// context of its own), rather than lost with the state ahead of
		// the store, whose end could then not be stored.
		return err
	}
	end := x.end
	if end != "" {
		x.end = ""
		emit(x, session.RunFinished{Status: end, Usage: x.st.RunUsage, Reason: x.reason})
	}
	if len(x.pending) == 0 {
		return nil
	}
	// Events emitted since the last commit are stamped with one clock
	// reading here (the clock is read some thirty times a turn otherwise);
	// an event that carries its own time, like model_finished, keeps it.
	var now time.Time
	for _, e := range x.pending {
		if e.Time.IsZero() {
			if now.IsZero() {
				now = x.now()
			}
			e.Time = now
			// The State folded these before they had a time.
			switch d := e.Data.(type) {
			case *session.InputRequired:
				x.st.stampRequest(d.RequestID, now)
			case *session.RunStarted, *session.RunResumed:
				x.st.RunSince = now
			}
		}
	}
	x.stamp = now
	// x.commit is reused: stores must not keep a *Commit. The session's
	// update time is that of its last event, which spares a clock reading
	// per commit (the events were emitted moments ago). Field by field
	// rather than a whole new Commit: x.commit lives in the heap, where
	// copying a whole struct costs a write barrier per word.
	c := &x.commit
	c.SessionID = x.st.SessionID
	c.ExpectSeq = x.pending[0].Seq - 1
	c.Events = x.pending
	c.Status = x.st.Status
	c.Turn = x.st.Turn
	c.Usage = x.st.Usage
	c.Time = x.pending[len(x.pending)-1].Time
	c.Fence = x.fence
	c.Answers, c.RunID = x.answers, x.st.RunID
	c.Outbox = x.owed(c.Outbox[:0])
	// The run's last commit frees the session: no write of its own for
	// the release (the keeper's renewals stop first).
	c.Release = end != "" && x.fence != 0 && x.lease.halt()
	c.Snapshot = nil
	every := x.r.snapEvery
	if n := int64(len(x.st.Messages)); x.r.snapGrow && n > every {
		every = n
	}
	if x.st.Seq-x.st.SnapshotSeq >= every {
		b, err := x.st.MarshalSnapshot()
		if err != nil {
			x.pending = x.pending[:0]
			return &Error{Kind: FailInternal, Msg: "snapshot", Err: err}
		}
		x.snapshot = session.Snapshot{Seq: x.st.Seq, Data: b}
		c.Snapshot = &x.snapshot
	}
	x.topic.settle() // the tokens relayed to other processes go first
	err := x.r.store.Commit(ctx, c)
	if err == nil && c.Snapshot != nil {
		x.st.SnapshotSeq = c.Snapshot.Seq
	}
	if err == nil && c.Release {
		x.lease.released()
	}
	c.Snapshot, x.snapshot = nil, session.Snapshot{}
	if err != nil {
		// The state in memory is now ahead of the store: the run stops,
		// and whoever goes on reloads the session. The tool results it
		// had are kept for a revival here (revive.go).
		x.holdResults()
		x.pending = x.pending[:0]
		x.dirty = true
		serr := storeError(x.st.SessionID, err)
		if ctx.Err() == nil && storeRefusal(serr) {
			x.r.revive.refused(serr)
		}
		return serr
	}
	x.r.revive.wrote()
	x.ran = x.ran[:0]
	x.committed = x.st.Seq
	x.answers, c.Answers = nil, nil
	x.stored = c.Status
	if end != "" {
		x.storedReason = x.reason
	}
	if x.r.observer != nil {
		x.observeCommit(ctx)
	}
	for _, e := range x.pending {
		x.last = e
		if x.yield != nil && !x.stopped && !x.yield(e, nil) {
			x.stopped = true
		}
	}
	x.topic.publishCommitted(x.pending)
	x.pending = x.pending[:0]
	if end != "" {
		x.hooks.turnEnd(ctx, x.info(), end, x.st.RunUsage)
	}
	return nil
}

// ranCall notes the attempt of call id, whose result the run now holds
// and commits next.
func (x *Exec) ranCall(id string, attempt int) {
	x.ran = append(x.ran, callAttempt{id: id, attempt: attempt})
}

// holdResults keeps, before a failed commit drops them, the pending
// results of the calls the run ran.
func (x *Exec) holdResults() {
	if len(x.ran) == 0 {
		return
	}
	for _, e := range x.pending {
		d, ok := e.Data.(*session.ToolResult)
		if !ok {
			continue
		}
		for _, c := range x.ran {
			if c.id == d.CallID {
				x.holdResult(*d, c.attempt)
				break
			}
		}
	}
	x.ran = x.ran[:0]
}

// holdResult keeps res, the result of attempt of its call, which the run
// could not store.
func (x *Exec) holdResult(res session.ToolResult, attempt int) {
	res.Result = slices.Clone(res.Result)
	x.inHand = append(x.inHand, heldResult{res: res, attempt: attempt})
}

// storeError wraps a failed commit.
func storeError(id string, err error) error {
	switch {
	case errors.Is(err, session.ErrFenced):
		return &Error{Kind: FailState, Code: CodeLeaseLost, Msg: "session " + id + " was taken over by another runner", Err: err}
	case errors.Is(err, session.ErrConflict):
		return &Error{Kind: FailStore, Code: CodeConflict, Msg: "session " + id + " was advanced by another writer", Err: err}
	}
	return &Error{Kind: FailStore, Msg: "commit", Err: err}
}

func (x *Exec) yieldErr(err error) {
	x.handle.setErr(err)
	if x.yield != nil && !x.stopped && !x.failed {
		x.failed = true
		x.yield(nil, err)
	}
}

// commitTimeout bounds the commits a run makes after its context ended:
// the results in hand and the record of how it stopped.
const commitTimeout = 10 * time.Second

// fail ends the run after err: an error event and run_finished (failed,
// or canceled when the context was canceled).
func (x *Exec) fail(ctx context.Context, err error) {
	re := AsError(err)
	status := session.StatusFailed
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || re.Kind == FailCanceled {
		status = session.StatusCanceled
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			re = AsError(cause) // the lease was lost, say, rather than canceled
			if re.Kind == FailInternal {
				re = &Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the run was canceled", Err: cause}
			}
		} else if re.Kind != FailCanceled {
			re = &Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the run was canceled", Err: err}
		}
	}
	if re.Kind == FailStore || re.Code == CodeLeaseLost || re.Code == CodeLeaseExpired || re.Code == CodeShuttingDown {
		// The store failed, or the session is no longer ours: the state
		// in memory may be ahead of the store, and writing is pointless
		// or forbidden. Report and leave the stored run as it was
		// (resumable). A run Shutdown hands over is left the same way,
		// for another runner to resume.
		x.yieldErr(re)
		return
	}
	if status == session.StatusCanceled {
		x.recordControl()
	}
	ev := session.Error{Code: re.ErrorCode(), Message: re.Error(), Recoverable: re.IsRecoverable()}
	var pe *panicError
	if errors.As(err, &pe) {
		ev.Stack = string(pe.stack)
	}
	emit(x, ev)
	x.End(status, re.ErrorCode())
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if cerr := x.Commit(wctx); cerr != nil {
		x.yieldErr(cerr)
	}
}

// reload replaces the run's state by the session's as stored, dropping
// what was applied and not committed: after a step that panicked, what it
// applied may not be coherent.
func (x *Exec) reload(ctx context.Context) error {
	sess, err := x.r.store.GetSession(ctx, x.st.SessionID)
	if err != nil {
		return notFound(x.st.SessionID, err)
	}
	st, err := x.r.loadFrom(ctx, sess)
	if err != nil {
		return err
	}
	st.agentRules, st.rulesFrom, st.rulesCtx = nil, x.r, x.st.rulesCtx
	x.st, x.pending, x.end, x.reason, x.ran = st, x.pending[:0], "", "", x.ran[:0]
	x.committed, x.dirty = st.Seq, false
	return nil
}

// owed appends to out the messages the pending events owe the run's
// source, when the runner delivers to it (Config.Deliver): its answer, a
// question for a person and the answer to one, its failure or pause.
func (x *Exec) owed(out []session.OutboxItem) []session.OutboxItem {
	src := x.st.Source
	if x.r.deliver == nil || src == "" || x.st.Parent != nil || !x.r.deliver(src) {
		return out
	}
	for _, e := range x.pending {
		switch d := e.Data.(type) {
		case *session.Final, *session.InputRequired, *session.InputResolved:
		case *session.RunFinished:
			if d.Status != session.StatusFailed && d.Status != session.StatusPaused {
				continue
			}
		default:
			continue
		}
		out = append(out, session.OutboxItem{SessionID: x.st.SessionID, Seq: e.Seq, Kind: string(e.Type), Source: src})
	}
	return out
}
