package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// The turn is the gateway's: it decides when a turn starts, what it
// answers, when newer input restarts it and when it ends, and it names
// every turn it starts (Turn.ID, recorded in each run_started of it as
// turn_id; a restart keeps the id). A Following is how anyone — the
// server's streams, the protocol adapters, a program — follows the turn
// that answers one input, on any replica: the turn's events from the
// session's log, to the turn's end, and what the turn came to (Outcome).
// Whether an input was refused, or is a duplicate, is the stored input's
// state (session.Inbox), read here; nobody else works it out.

// TurnState is how a turn ended for the input a Following follows.
type TurnState string

// Turn states.
const (
	// TurnAnswered: a run of the turn finished — done, waiting for a
	// person, or paused at a limit (Outcome.Status says which).
	TurnAnswered TurnState = "answered"
	// TurnRefused: the input was set aside, refused, before any turn
	// answered it (the reject policy, a module that failed or stopped the
	// turn, content that could not be decoded); Outcome.Code and Reason
	// say why.
	TurnRefused TurnState = "refused"
	// TurnInterrupted: the turn's run was interrupted or canceled by a
	// person, or interrupted by another source's input, and the turn does
	// not restart (Outcome.Status: interrupted or canceled).
	TurnInterrupted TurnState = "interrupted"
	// TurnFailed: the turn's run failed, the store failed under it, or
	// the restart newer input asked for was set aside.
	TurnFailed TurnState = "failed"
	// TurnHandedOver: newer input interrupted the turn, and it was
	// answered within another turn (Outcome.HandedTo), not by a restart of
	// this one.
	TurnHandedOver TurnState = "handed_over"
)

// Outcome is what the turn that answers an input came to.
type Outcome struct {
	State TurnState `json:"state"`
	// Status is the status of the turn's last run, when a run's end ended
	// the turn.
	Status session.Status `json:"status,omitempty"`
	// Code and Reason say why the turn was refused, failed or was
	// interrupted (a code of the catalog, codes.go).
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// TurnID and RunID name the turn and its last run, when one started.
	TurnID string `json:"turn_id,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// HandedTo is the turn that answered the newer input (TurnHandedOver).
	HandedTo string `json:"handed_to,omitempty"`
}

// Err is the outcome as an error, for a turn that ended without a run's
// end to show: refused, or failed before or between its runs. Nil
// otherwise.
func (o *Outcome) Err() error {
	if o == nil {
		return nil
	}
	switch {
	case o.State == TurnRefused:
		return &agentrt.Error{Kind: kindOf(o.Code), Code: o.Code, Msg: "the input was refused: " + o.Reason}
	case o.State == TurnFailed && o.Status == "":
		return &agentrt.Error{Kind: kindOf(o.Code), Code: o.Code, Msg: o.Reason}
	}
	return nil
}

func kindOf(code string) agentrt.ErrorKind {
	if info, ok := agentrt.LookupCode(code); ok {
		return info.Kind
	}
	return agentrt.FailState
}

// refusal reads the code and the reason of a refused input: the gateway
// stores a refusal's reason as "code: reason" (setAside, Reject,
// dropCorrupt); one stored otherwise (by an older version's reject
// policy) is input_rejected.
func refusal(in session.InboxInput) (code, reason string) {
	if c, r, ok := strings.Cut(in.Reason, ": "); ok {
		if _, known := agentrt.LookupCode(c); known {
			return c, r
		}
	}
	return agentrt.CodeInputRejected, in.Reason
}

// Refusal is the error of a refused input as the gateway reports it
// (its code, stored with the reason): what a program that read the
// input from the inbox (agentrt run) tells its user. Nil for an input
// that is not refused.
func Refusal(in session.InboxInput) error {
	if in.State != session.InputRefused {
		return nil
	}
	return refusedErr(in)
}

// RefusalReason is the reason to store with an input refused for code
// (a code of the catalog), as the gateway stores its own refusals, so
// that its followers read the code back.
func RefusalReason(code, reason string) string { return code + ": " + reason }

// refusedErr is the error of a refused input, as Submit and a Following
// report it.
func refusedErr(in session.InboxInput) error {
	code, reason := refusal(in)
	o := Outcome{State: TurnRefused, Code: code, Reason: reason}
	return o.Err()
}

// DefaultFollowPoll is Config.FollowPoll when it is zero.
const DefaultFollowPoll = 2 * time.Second

// Following follows the turn that answers one input: made by Open (which
// stores the input once the session is watched, so that none of the
// turn's live tokens is missed) or Follow (an input stored before, on
// any replica). Events yields the turn's events; Outcome says what the
// turn came to once they end.
//
// Lifecycle: Events is called once; everything it starts ends before it
// returns. Stored may be called from another goroutine while Events runs.
type Following struct {
	g       *Gateway
	in      *Input // Open's input, stored by Events; nil for Follow
	session string
	after   int64

	stored   chan struct{} // closed once the input is stored, or cannot be
	watching chan struct{} // closed once the session's watch sees its live tokens
	started  atomic.Bool   // Events was called
	kick     chan struct{} // the tracker's state changed: the checker looks again

	// before is the gateway's next change when Events submitted the
	// input (nil for Follow): the checker's first look is spared when
	// the input was stored anew (pending, then) and no change since
	// names it.
	before *change

	mu       sync.Mutex
	sub      *Submitted  // guarded by mu
	storeErr error       // guarded by mu
	tr       TurnTracker // guarded by mu
	outcome  *Outcome    // guarded by mu: set when the turn ended
}

// Open returns the Following of the turn that will answer in: its
// Events watches in's session (which must exist: Runner.CreateSession)
// after seq after, then submits in (as Submit does) and follows the turn
// that answers it. Stored reports the submission's result.
func (g *Gateway) Open(in Input, after int64) *Following {
	f := g.newFollowing(after)
	f.in = &in
	sess, err := g.sessionOf(in)
	if err != nil {
		f.setStored(nil, err)
	}
	f.session = sess
	return f
}

// Follow returns the Following of the turn that answers sub, an input
// stored before (by this process or any other), whose session's events
// are watched after seq after: zero, unless the caller knows the turn
// started after it.
func (g *Gateway) Follow(sub *Submitted, after int64) *Following {
	f := g.newFollowing(after)
	f.session = sub.Session
	f.setStored(sub, nil)
	return f
}

// FollowSession returns a Following of the run of session that goes on
// after seq after — one a person's answer resumes, say — to its turn's
// end, as for an input's.
func (g *Gateway) FollowSession(sess string, after int64) *Following {
	f := g.newFollowing(after)
	f.session = sess
	f.setStored(&Submitted{Session: sess}, nil)
	return f
}

func (g *Gateway) newFollowing(after int64) *Following {
	return &Following{g: g, after: after, stored: make(chan struct{}), watching: make(chan struct{}), kick: make(chan struct{}, 1)}
}

func (f *Following) setStored(sub *Submitted, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stored:
		return
	default:
	}
	f.sub, f.storeErr = sub, err
	if sub != nil {
		f.tr.input = sub.ID
	}
	close(f.stored)
}

// Stored waits until the input is stored — by Events, running on another
// goroutine, for Open — and returns it, or the error that kept it from
// being stored (the session could not be watched, Submit's error: a
// refusal by the source's policy among them), or ctx's.
func (f *Following) Stored(ctx context.Context) (*Submitted, error) {
	select {
	case <-f.stored:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sub, f.storeErr
}

// Watching returns a channel closed once Events watches the session
// (sees its live tokens): a run that starts after that is followed from
// its first token. It stays open if the watch fails first (Events yields
// why).
func (f *Following) Watching() <-chan struct{} { return f.watching }

// Outcome returns what the turn came to, once Events has ended at the
// turn's end (false when it ended otherwise: its context, a failed
// watch).
func (f *Following) Outcome() (Outcome, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outcome == nil {
		return Outcome{}, false
	}
	return *f.outcome, true
}

// endCause ends a Following's watch from its checker: the stored inputs
// say the turn ended.
type endCause struct{ o Outcome }

func (e *endCause) Error() string { return "the turn ended: " + string(e.o.State) }

// Events yields the turn's events — the run that answers the input from
// its run_started (or from the input_steered that gave it to a running
// run), through the runs that restart it after newer input, to the run
// end that ends the turn (yielded, then the sequence ends) — with the
// live tokens (seq 0) of each. Events of the session that are not the
// turn's are skipped. It ends with an error, its last value, when the
// input is refused (Outcome: refused), the turn's restart is set aside,
// the input could not be stored, or the session's watch fails; it ends
// without one when ctx ends (Outcome then says nothing). Call it once.
func (f *Following) Events(ctx context.Context) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		if !f.started.CompareAndSwap(false, true) {
			yield(nil, errors.New("gateway: a Following's Events is called once"))
			return
		}
		// Stored never waits for a watch that ended before it could store.
		defer f.setStored(nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeInternal,
			Msg: "the session's watch ended before the input was stored"})
		if err := f.storedErr(); err != nil {
			yield(nil, err)
			return
		}
		ctx, end := context.WithCancelCause(ctx)
		var checker sync.WaitGroup
		defer checker.Wait()
		defer end(nil)
		checker.Go(func() { f.check(ctx, end) })

		after := f.after
		for {
			wctx, stopWatch := context.WithCancel(ctx)
			again := false
			subscribed := func() {
				if after != f.after {
					return
				}
				close(f.watching)
				if f.in == nil {
					return
				}
				f.before = f.g.changes.wait()
				sub, err := f.g.Submit(ctx, *f.in)
				if err != nil && sub != nil {
					// Stored, and refused at once (the source's policy, or a
					// refused input sent again): the turn came to that.
					if o := f.g.refused(ctx, sub); o != nil {
						f.finish(*o)
					}
				}
				f.setStored(sub, err)
				if err != nil {
					stopWatch()
					return
				}
				if sub.Duplicate && after > 0 {
					// Its turn may be anywhere in the log.
					again = true
					stopWatch()
				}
			}
			ended := false
			for ev, err := range f.g.r.WatchSubscribed(wctx, f.session, after, subscribed) {
				if again {
					break
				}
				if err != nil {
					if ctx.Err() != nil {
						// A read cut short: ctx ended, or the checker ended
						// the turn (its cause, below, says how).
						break
					}
					f.finish(Outcome{State: TurnFailed, Code: agentrt.AsError(err).ErrorCode(), Reason: err.Error()})
					f.setStored(nil, err) // Stored says why, when nothing was stored
					yield(nil, err)
					stopWatch()
					return
				}
				keep, o := f.see(ev)
				if keep && !yield(ev, nil) {
					stopWatch()
					return
				}
				if o != nil {
					f.finish(*o)
					ended = true
					break
				}
			}
			stopWatch()
			if ended {
				return
			}
			if again {
				after = 0
				continue
			}
			break
		}
		if err := f.storedErr(); err != nil {
			yield(nil, err)
			return
		}
		var ec *endCause
		if errors.As(context.Cause(ctx), &ec) {
			f.finish(ec.o)
			if err := ec.o.Err(); err != nil {
				yield(nil, err)
			}
		}
	}
}

func (f *Following) storedErr() error {
	select {
	case <-f.stored:
	default:
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.storeErr
}

// see hands ev to the tracker.
func (f *Following) see(ev *session.Event) (bool, *Outcome) {
	f.mu.Lock()
	before := f.tr.phase()
	keep, o := f.tr.See(ev)
	changed := f.tr.phase() != before
	f.mu.Unlock()
	if changed {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	return keep, o
}

func (f *Following) finish(o Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outcome == nil {
		f.outcome = &o
	}
}

// check looks at the stored inputs while nothing in the log can end the
// turn: until a run takes the input (it may be refused), and while the
// turn waits for its restart (which may be set aside). A refusal by this
// process's gateway of an input the turn depends on wakes it at once
// (one of other inputs does not make it read the store); one by another
// process is found within the gateway's FollowPoll. It ends the watch,
// with the outcome as its cause, when the inputs say the turn ended.
func (f *Following) check(ctx context.Context, end context.CancelCauseFunc) {
	select {
	case <-f.stored:
	case <-ctx.Done():
		return
	}
	if _, err := f.Stored(ctx); err != nil {
		return
	}
	poll := time.NewTimer(f.g.cfg.FollowPoll)
	defer poll.Stop()
	first := true
	for {
		next := f.g.changes.wait()
		if first && f.fresh() {
			// Stored anew, pending then, and refused by this process
			// since only if a change names it: the look is spared (one
			// read of the inbox a turn). Another process's refusal is
			// seen at the next FollowPoll, as ever.
			next = f.before
		} else if o := f.look(ctx); o != nil {
			end(&endCause{*o})
			return
		}
		first = false
		f.mu.Lock()
		ph := f.tr.phase()
		idle := ph == phaseRunning || ph == phaseWaiting && f.tr.input == ""
		f.mu.Unlock()
		if idle {
			// A run has the turn: its log says how it ends.
			select {
			case <-f.kick:
			case <-ctx.Done():
				return
			}
			continue
		}
		poll.Reset(f.g.cfg.FollowPoll)
		for again := false; !again; {
			select {
			case <-next.done:
				next, again = next.since(f.dependsOn())
			case <-f.kick:
				again = true
			case <-poll.C:
				again = true
			case <-ctx.Done():
				return
			}
		}
	}
}

// fresh reports whether Events stored the input anew, pending (not a
// duplicate of one stored before, which may have been refused already).
func (f *Following) fresh() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.before != nil && f.sub != nil && !f.sub.Duplicate && f.storeErr == nil
}

// dependsOn returns the inputs whose refusal may end the turn now: the
// followed input, until a run takes it; the inputs a restart answers,
// while the turn waits for it.
func (f *Following) dependsOn() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.tr.phase() {
	case phaseWaiting:
		if f.sub != nil && f.sub.ID != "" {
			return []string{f.sub.ID}
		}
	case phaseRestarting:
		return slices.Clone(f.tr.restart)
	}
	return nil
}

// look reads the stored inputs the turn's end depends on now.
func (f *Following) look(ctx context.Context) *Outcome {
	f.mu.Lock()
	sub, tr := f.sub, f.tr
	tr.restart = slices.Clone(tr.restart)
	f.mu.Unlock()
	return f.g.Ended(ctx, sub, &tr)
}

// Ended reports what the stored inputs say of the turn that answers
// input sub, which t has followed in the session's log so far: refused,
// when no run has taken the input and it was refused; failed, when the
// turn waits for its restart after newer input and the restart's inputs
// were all set aside (it never comes). Nil otherwise: the log is to say
// how the turn ends, or the inputs could not be read. A Following reads
// this while the log is silent; a reader of the log alone (a protocol
// adapter rendering a turn again from the store) asks it when the log
// has not ended the turn, and draws the same line.
func (g *Gateway) Ended(ctx context.Context, sub *Submitted, t *TurnTracker) *Outcome {
	if sub == nil {
		return nil
	}
	switch t.phase() {
	case phaseWaiting:
		if sub.ID == "" {
			return nil
		}
		return g.refused(ctx, sub)
	case phaseRestarting:
		// The restart answers the inputs that interrupted the run (of the
		// source the log names; a log written before it did: the input's);
		// if a failed or stopped restart set every one aside, it never
		// comes.
		source := cmp.Or(t.restartSource, sub.Source)
		if source == "" {
			return nil
		}
		ins, err := g.inbox.Inputs(ctx, source, sub.Seq, 0)
		if err != nil {
			return nil
		}
		var last *session.InboxInput
		for i := range ins {
			if !slices.Contains(t.restart, ins[i].ID) {
				continue
			}
			if ins[i].State != session.InputRefused {
				return nil
			}
			last = &ins[i]
		}
		if last == nil {
			return nil
		}
		code, reason := refusal(*last)
		return &Outcome{State: TurnFailed, Code: code, Reason: "the turn's restart was set aside: " + reason, TurnID: t.turn, RunID: t.run}
	}
	return nil
}

// refused returns the outcome of input sub if it is stored refused; nil
// if it is not, or cannot be read.
func (g *Gateway) refused(ctx context.Context, sub *Submitted) *Outcome {
	in, err := g.input(ctx, sub.Source, sub.Seq, sub.ID)
	if err != nil || in.State != session.InputRefused {
		return nil
	}
	code, reason := refusal(in)
	return &Outcome{State: TurnRefused, Code: code, Reason: reason}
}

// input reads the stored input id of source, whose Seq is seq.
func (g *Gateway) input(ctx context.Context, source string, seq int64, id string) (session.InboxInput, error) {
	ins, err := g.inbox.Inputs(ctx, source, seq-1, 1)
	if err != nil {
		return session.InboxInput{}, err
	}
	if len(ins) == 0 || ins[0].ID != id {
		return session.InboxInput{}, fmt.Errorf("input %s of source %s is not in the inbox", id, source)
	}
	return ins[0], nil
}

// changes wakes the followers of this process's inputs when its gateway
// refuses some, naming them: a follower whose turn depends on one of
// them reads its state from the store; the others do not. A broadcast,
// not a channel per input, so that any number of followers of one input
// each hear it, and none of them can stop another hearing it.
type changes struct {
	mu   sync.Mutex
	next *change // the change to come; nil until someone waits. Guarded by mu.
}

// change is one refusal. Invariant: ids and after are set before done is
// closed, and never changed after.
type change struct {
	done  chan struct{} // closed when it happened
	ids   []string      // the inputs it refused
	after *change       // the change that comes next
}

// wait returns the change to come.
func (c *changes) wait() *change {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = &change{done: make(chan struct{})}
	}
	return c.next
}

// signal tells everyone waiting that ids were refused.
func (c *changes) signal(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.next
	if ch == nil {
		return // nobody waits
	}
	ch.ids, ch.after = ids, &change{done: make(chan struct{})}
	c.next = ch.after
	close(ch.done)
}

// since walks the changes from c that happened, and returns the first
// to come, and whether any of them refused one of ids.
func (c *change) since(ids []string) (next *change, hit bool) {
	for {
		select {
		case <-c.done:
		default:
			return c, hit
		}
		hit = hit || slices.ContainsFunc(c.ids, func(id string) bool { return slices.Contains(ids, id) })
		c = c.after
	}
}

// phase is where a TurnTracker stands.
type phase int

const (
	phaseWaiting    phase = iota // no run has taken the input yet
	phaseRunning                 // a run of the turn runs
	phaseRestarting              // newer input interrupted the run: the turn restarts in a new one
	phaseEnded
)

// TurnTracker picks the turn that answers one input out of its
// session's events, and sees where it ends: what a Following follows,
// and what a reader of the log alone (a protocol adapter rendering a
// turn again from the store) uses to draw the same line. It reads only
// the log: whatever replica wrote it, every reader draws the same line.
// It sees nothing of a refused input (that is the inbox's; a Following
// reads it). The zero TurnTracker follows the session's next run.
//
// The turn starts at the run_started that lists the input (or the
// input_steered that gave it to a running run). Its runs' events are
// its own. A run interrupted for newer input (interrupted.inputs) is
// restarted by the gateway: the restart is the run_started that keeps
// the turn's id or lists one of those inputs; if they are steered into
// another run instead, the turn was handed over. Any other end of a run
// of the turn ends the turn.
type TurnTracker struct {
	input string // the followed input; "": the next run of the session
	turn  string // the turn, once a run took the input
	run   string // the turn's current run
	// restart are the inputs the turn's run was interrupted for (its
	// restart answers them), restartSource their source.
	restart       []string
	restartSource string
	// restarting: the run ended interrupted for them.
	restarting bool
	ended      bool
	// failure is the current run's own error event (not a model
	// attempt's), for a failed run's outcome; interrupt its interrupted
	// event's reason.
	failure   *session.Error
	interrupt string
}

// TrackInput returns a TurnTracker of the turn that answers input id.
func TrackInput(id string) *TurnTracker { return &TurnTracker{input: id} }

// TrackRun returns a TurnTracker of the turn whose run runID runs (or
// waits): a follower that knows the run, as after answering its request.
func TrackRun(runID string) *TurnTracker { return &TurnTracker{run: runID, turn: runID} }

// Started reports whether a run took the input: the turn began.
func (t *TurnTracker) Started() bool { return t.run != "" }

// Ended reports whether the turn ended.
func (t *TurnTracker) Ended() bool { return t.ended }

func (t *TurnTracker) phase() phase {
	switch {
	case t.ended:
		return phaseEnded
	case t.restarting:
		return phaseRestarting
	case t.run != "":
		return phaseRunning
	}
	return phaseWaiting
}

// See takes the session's next event, in seq order (live tokens, seq
// 0, among them): keep says it is the turn's, end (non-nil) that it
// ended the turn — its last event, which keep includes.
func (t *TurnTracker) See(ev *session.Event) (keep bool, end *Outcome) {
	if t.ended {
		return false, nil
	}
	switch d := ev.Data.(type) {
	case *session.RunStarted:
		tid := cmp.Or(d.TurnID, ev.RunID)
		switch {
		case t.run == "" && (t.input == "" || slices.Contains(d.Inputs, t.input)):
		case t.restarting && (tid == t.turn || slices.ContainsFunc(d.Inputs, func(id string) bool { return slices.Contains(t.restart, id) })):
		default:
			return false, nil
		}
		t.turn, t.run = tid, ev.RunID
		t.restarting, t.restart, t.failure, t.interrupt = false, nil, nil, ""
		return true, nil
	case *session.InputSteered:
		switch {
		case t.run == "" && t.input != "" && slices.Contains(d.Inputs, t.input):
			t.turn, t.run = cmp.Or(d.TurnID, ev.RunID), ev.RunID
			return true, nil
		case t.restarting && slices.ContainsFunc(d.Inputs, func(id string) bool { return slices.Contains(t.restart, id) }):
			t.ended = true
			return false, &Outcome{State: TurnHandedOver, TurnID: t.turn, RunID: t.run, HandedTo: cmp.Or(d.TurnID, ev.RunID),
				Reason: "the newer input that interrupted the turn was given to another turn's run"}
		}
		return false, nil
	}
	if t.run == "" && t.input == "" && ev.RunID != "" && !t.restarting {
		// Following the session's next run: this is it (a run a person's
		// answer resumes goes on under its own id).
		t.run, t.turn = ev.RunID, ev.RunID
	}
	if t.run == "" || ev.RunID != t.run || t.restarting {
		return false, nil
	}
	switch d := ev.Data.(type) {
	case *session.Error:
		if d.Model == "" && d.Attempt == 0 {
			t.failure = d
		}
	case *session.Interrupted:
		t.interrupt = d.Reason
		t.restart = append(t.restart, d.Inputs...)
		if d.Source != "" {
			t.restartSource = d.Source
		}
	case *session.RunFinished:
		if d.Status == session.StatusInterrupted && len(t.restart) > 0 {
			t.restarting = true
			return true, nil
		}
		t.ended = true
		o := &Outcome{Status: d.Status, TurnID: t.turn, RunID: t.run, Reason: d.Reason}
		switch d.Status {
		case session.StatusDone, session.StatusWaiting, session.StatusPaused:
			o.State = TurnAnswered
		case session.StatusInterrupted, session.StatusCanceled:
			o.State = TurnInterrupted
			o.Code = agentrt.CodeInterrupted
			if d.Status == session.StatusCanceled {
				o.Code = agentrt.CodeCanceled
			}
			o.Reason = cmp.Or(t.interrupt, d.Reason)
		default:
			o.State = TurnFailed
			if t.failure != nil {
				o.Code, o.Reason = t.failure.Code, t.failure.Message
			} else {
				o.Code = cmp.Or(d.Reason, agentrt.CodeInternal)
			}
		}
		return true, o
	}
	return true, nil
}
