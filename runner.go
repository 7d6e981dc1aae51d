package agentrt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Config configures a Runner. Zero values mean defaults.
type Config struct {
	// Store keeps sessions and their logs. Required.
	Store session.Store
	// Agents the runner can run, by name.
	Agents []*Agent
	// Executors override the built-in executors for every agent (an
	// agent's own Executors win over these).
	Executors map[Kind]Executor
	// Hooks run for every agent, before the agent's own at equal priority.
	Hooks Hooks
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NewID makes run and request ids; nil means random 128-bit hex.
	NewID func() string
	// SnapshotEvery is how many events may be committed after a session's
	// last state snapshot before a commit writes a new one; zero means
	// DefaultSnapshotEvery. Loading a session replays at most about this
	// many events after its snapshot.
	SnapshotEvery int
}

// DefaultSnapshotEvery is the snapshot cadence when Config.SnapshotEvery
// is zero. A snapshot holds the whole state, history included, so writing
// one every step or every run would make a long conversation's writes grow
// with the square of its length; replaying a few dozen events is cheap.
const DefaultSnapshotEvery = 64

// Runner runs agents over durable sessions. It is safe for concurrent use;
// one session runs at most once at a time in a Runner (a second Run of a
// busy session fails with a bad_state error), and commits from another
// process on the same session fail with session.ErrConflict.
type Runner struct {
	store     session.Store
	agents    map[string]*Agent
	executors map[Kind]Executor // Config.Executors
	hooks     Hooks
	now       func() time.Time
	newID     func() string
	snapEvery int64
	wallClock bool // now is time.Now (see Exec.now)

	// execs holds *Exec for reuse: an Exec carries a run's buffers, the
	// request's message list among them, which would otherwise be
	// allocated and grown again by every run.
	execs sync.Pool

	mu   sync.Mutex
	busy map[string]bool // sessions with a run in progress; guarded by mu
}

// NewRunner returns a Runner.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("runtime: Config.Store is required")
	}
	r := &Runner{
		store:     cfg.Store,
		agents:    make(map[string]*Agent, len(cfg.Agents)),
		executors: make(map[Kind]Executor, len(cfg.Executors)),
		hooks:     cfg.Hooks,
		now:       cfg.Now,
		newID:     cfg.NewID,
		busy:      make(map[string]bool),
	}
	r.hooks.sort()
	if r.now == nil {
		r.now, r.wallClock = time.Now, true
	}
	if r.newID == nil {
		r.newID = newIDSource()
	}
	switch {
	case cfg.SnapshotEvery < 0:
		return nil, fmt.Errorf("runtime: SnapshotEvery %d is negative", cfg.SnapshotEvery)
	case cfg.SnapshotEvery == 0:
		r.snapEvery = DefaultSnapshotEvery
	default:
		r.snapEvery = int64(cfg.SnapshotEvery)
	}
	for k, e := range cfg.Executors {
		if e == nil {
			return nil, fmt.Errorf("runtime: nil executor for %q", k)
		}
		r.executors[k] = e
	}
	for _, a := range cfg.Agents {
		if err := a.init(); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
		if _, dup := r.agents[a.Name]; dup {
			return nil, fmt.Errorf("runtime: two agents named %q", a.Name)
		}
		r.agents[a.Name] = a
	}
	return r, nil
}

// idSource makes random 128-bit ids from a ChaCha8 stream seeded from
// crypto/rand: as unpredictable, without a system call per id.
type idSource struct {
	mu sync.Mutex
	r  *mrand.ChaCha8 // guarded by mu
}

func newIDSource() func() string {
	var seed [32]byte
	_, _ = rand.Read(seed[:])
	s := &idSource{r: mrand.NewChaCha8(seed)}
	return s.next
}

func (s *idSource) next() string {
	var b [16]byte
	s.mu.Lock()
	_, _ = s.r.Read(b[:])
	s.mu.Unlock()
	return hex.EncodeToString(b[:])
}

// Store returns the runner's store.
func (r *Runner) Store() session.Store { return r.store }

// Agent returns the named agent.
func (r *Runner) Agent(name string) (*Agent, bool) {
	a, ok := r.agents[name]
	return a, ok
}

// AgentNames returns the agents' names, sorted.
func (r *Runner) AgentNames() []string {
	names := make([]string, 0, len(r.agents))
	for n := range r.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Runner) agent(name string) (*Agent, error) {
	if a, ok := r.agents[name]; ok {
		return a, nil
	}
	return nil, &Error{Kind: FailInput, Code: "unknown_agent",
		Msg: fmt.Sprintf("unknown agent %q (known: %s)", name, strings.Join(r.AgentNames(), ", "))}
}

// CreateSession creates a session for the named agent. An empty id gets a
// fresh one.
func (r *Runner) CreateSession(ctx context.Context, agent, id string, metadata map[string]string) (*session.Session, error) {
	if _, err := r.agent(agent); err != nil {
		return nil, err
	}
	if id == "" {
		id = r.newID()
	}
	now := r.now()
	s := &session.Session{ID: id, Agent: agent, Status: session.StatusIdle, Metadata: metadata, CreatedAt: now, UpdatedAt: now}
	if err := r.store.CreateSession(ctx, s); err != nil {
		if errors.Is(err, session.ErrExists) {
			return nil, &Error{Kind: FailInput, Code: "session_exists", Msg: fmt.Sprintf("session %q already exists", id), Err: err}
		}
		return nil, &Error{Kind: FailStore, Msg: "create session", Err: err}
	}
	return s, nil
}

// Load rebuilds a session's state: its snapshot, then the events after it.
func (r *Runner) Load(ctx context.Context, id string) (*State, error) {
	sess, err := r.store.GetSession(ctx, id)
	if err != nil {
		return nil, notFound(id, err)
	}
	if sess.LastSeq == 0 {
		// A new session: no snapshot, no events to read.
		return NewState(id, sess.Agent), nil
	}
	snap, err := r.store.LoadSnapshot(ctx, id)
	if err != nil {
		return nil, &Error{Kind: FailStore, Msg: "load snapshot of session " + id, Err: err}
	}
	var st *State
	if snap != nil {
		if st, err = UnmarshalState(snap.Data); err != nil {
			return nil, &Error{Kind: FailStore, Msg: "session " + id, Err: err}
		}
		st.Seq, st.SnapshotSeq = snap.Seq, snap.Seq
	} else {
		st = NewState(id, sess.Agent)
	}
	if st.Seq < sess.LastSeq {
		if err := r.replay(ctx, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// replay applies the stored events after st.Seq.
func (r *Runner) replay(ctx context.Context, st *State) error {
	for e, err := range r.store.Events(ctx, st.SessionID, st.Seq) {
		if err != nil {
			return &Error{Kind: FailStore, Msg: "read events of session " + st.SessionID, Err: err}
		}
		if err := st.Apply(e); err != nil {
			return &Error{Kind: FailStore, Msg: "replay session " + st.SessionID, Err: err}
		}
	}
	return nil
}

func notFound(id string, err error) error {
	if errors.Is(err, session.ErrNotFound) {
		return &Error{Kind: FailInput, Code: "not_found", Msg: fmt.Sprintf("session %q not found", id), Err: err}
	}
	return &Error{Kind: FailStore, Msg: "get session " + id, Err: err}
}

func (r *Runner) acquire(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[id] {
		return &Error{Kind: FailState, Code: "busy", Msg: fmt.Sprintf("session %q is already running", id)}
	}
	r.busy[id] = true
	return nil
}

// finish ends what begin started: the session is free again and x goes
// back to the pool.
func (r *Runner) finish(x *Exec) {
	r.release(x.st.SessionID)
	r.putExec(x)
}

func (r *Runner) release(id string) {
	r.mu.Lock()
	delete(r.busy, id)
	r.mu.Unlock()
}

// Input is one user turn.
type Input struct {
	Text string
	// Source names where the input came from (a channel, a user); optional.
	Source string
}

// Run submits input to a session and runs the turn until it finishes,
// waits for a human, pauses at a limit, fails or is canceled.
//
// Events are yielded after they are committed to the store, except live
// token events (Seq 0), which are yielded as the model streams. A failure
// of the run itself is recorded as an error event and a run_finished event
// with status failed, not yielded as an error; the sequence yields a
// non-nil error (its last value) only when the run could not start or its
// events could not be stored. Breaking out of the loop cancels the run,
// which is recorded with status canceled and can be resumed.
func (r *Runner) Run(ctx context.Context, sessionID string, in Input) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		if strings.TrimSpace(in.Text) == "" {
			yield(nil, &Error{Kind: FailInput, Code: "empty_input", Msg: "input is empty"})
			return
		}
		x, err := r.begin(ctx, sessionID, yield)
		if err != nil {
			yield(nil, err)
			return
		}
		defer r.finish(x)
		switch x.st.Status {
		case session.StatusRunning:
			yield(nil, &Error{Kind: FailState, Code: "unfinished_run",
				Msg: fmt.Sprintf("session %q has an unfinished run (the process running it stopped); resume it first", sessionID)})
			return
		case session.StatusWaiting:
			yield(nil, waitingErr(x.st))
			return
		}
		runID := r.newID()
		info := HookInfo{SessionID: sessionID, RunID: runID, Agent: x.agent.Name, Turn: x.st.Turn + 1}
		if err := x.hooks.turnStart(ctx, info, in.Text); err != nil {
			yield(nil, err)
			return
		}
		// run_started is committed with the first step's events (one
		// transaction fewer per turn); a crash before that commit loses a
		// turn nobody has seen begin.
		x.emitStart(runID, session.RunStarted{Input: in.Text, Source: in.Source})
		r.loop(ctx, x)
	}
}

func waitingErr(st *State) error {
	ids := make([]string, len(st.Requests))
	for i, q := range st.Requests {
		ids[i] = q.ID
	}
	return &Error{Kind: FailState, Code: "waiting",
		Msg: fmt.Sprintf("session %q is waiting for a human decision on request %s", st.SessionID, strings.Join(ids, ", "))}
}

// Resume continues a session whose run stopped before it finished: after a
// crash (status running), once every pending request is resolved (status
// waiting), after a pause at a limit, or after a failure or cancellation.
// Completed tool calls are not run again. Its events are like Run's.
func (r *Runner) Resume(ctx context.Context, sessionID string) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		x, err := r.begin(ctx, sessionID, yield)
		if err != nil {
			yield(nil, err)
			return
		}
		defer r.finish(x)
		st := x.st
		var reason string
		switch st.Status {
		case session.StatusRunning:
			reason = "recovered"
		case session.StatusWaiting:
			if len(st.Requests) > 0 {
				yield(nil, waitingErr(st))
				return
			}
			reason = "approval"
		case session.StatusPaused:
			reason = "resume"
		case session.StatusFailed, session.StatusCanceled, session.StatusInterrupted:
			reason = "retry"
		default:
			yield(nil, &Error{Kind: FailState, Code: "nothing_to_resume",
				Msg: fmt.Sprintf("session %q has nothing to resume (status %s)", sessionID, st.Status)})
			return
		}
		info := x.info()
		if err := x.hooks.turnStart(ctx, info, ""); err != nil {
			yield(nil, err)
			return
		}
		emit(x, session.RunResumed{Reason: reason, From: st.Status})
		if err := x.Commit(ctx); err != nil {
			x.yieldErr(err)
			return
		}
		r.loop(ctx, x)
	}
}

func (r *Runner) begin(ctx context.Context, id string, yield func(*session.Event, error) bool) (*Exec, error) {
	if err := r.acquire(id); err != nil {
		return nil, err
	}
	st, err := r.Load(ctx, id)
	if err != nil {
		r.release(id)
		return nil, err
	}
	a, err := r.agent(st.Agent)
	if err != nil {
		r.release(id)
		return nil, err
	}
	return r.newExec(a, st, yield), nil
}

// loop steps until the run stops.
func (r *Runner) loop(ctx context.Context, x *Exec) {
	for x.st.Status == session.StatusRunning {
		if err := r.step(ctx, x); err != nil {
			x.fail(ctx, err)
			return
		}
		if x.stopped && x.st.Status == session.StatusRunning {
			x.fail(ctx, &Error{Kind: FailCanceled, Code: "canceled", Msg: "the caller stopped reading events"})
			return
		}
	}
}

// step decides and executes one instruction and commits its events.
func (r *Runner) step(ctx context.Context, x *Exec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := x.agent.Policy
	if p == nil {
		p = React{}
	}
	ins, err := p.Next(ctx, x.agent, x.st)
	if err != nil {
		return &Error{Kind: FailPolicy, Msg: "policy", Err: err}
	}
	if ins.Kind == KindWait {
		x.End(session.StatusWaiting, "")
		return x.Commit(ctx)
	}
	exec := r.executor(x.agent, ins.Kind)
	if exec == nil {
		return &Error{Kind: FailConfig, Code: "no_executor", Msg: fmt.Sprintf("no executor for instruction %q", ins.Kind)}
	}
	if err := exec(ctx, x, ins); err != nil {
		return err
	}
	return x.Commit(ctx)
}

func (r *Runner) executor(a *Agent, k Kind) Executor {
	if e := a.Executors[k]; e != nil {
		return e
	}
	if e := r.executors[k]; e != nil {
		return e
	}
	return builtinExecutor(k)
}

// Step decides and executes one instruction on st, a state returned by
// Load whose status is running, and returns the events it committed. It is
// for callers that drive a run one step at a time; live token events are
// not returned. After an error, reload the state.
func (r *Runner) Step(ctx context.Context, st *State) ([]*session.Event, error) {
	if st.Status != session.StatusRunning {
		return nil, &Error{Kind: FailState, Code: "not_running", Msg: fmt.Sprintf("session %q is %s, not running", st.SessionID, st.Status)}
	}
	a, err := r.agent(st.Agent)
	if err != nil {
		return nil, err
	}
	if err := r.acquire(st.SessionID); err != nil {
		return nil, err
	}
	defer r.release(st.SessionID)
	var out []*session.Event
	x := r.newExec(a, st, func(e *session.Event, err error) bool {
		if e != nil && e.Seq != 0 {
			out = append(out, e)
		}
		return true
	})
	defer r.putExec(x)
	x.live = false
	if err := r.step(ctx, x); err != nil {
		x.fail(ctx, err)
	}
	return out, nil
}

// Start commits the start of a turn (run_started) and returns the state
// without running it, for callers that drive the run with Step.
func (r *Runner) Start(ctx context.Context, sessionID string, in Input) (*State, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, &Error{Kind: FailInput, Code: "empty_input", Msg: "input is empty"}
	}
	x, err := r.begin(ctx, sessionID, nil)
	if err != nil {
		return nil, err
	}
	defer r.finish(x)
	switch x.st.Status {
	case session.StatusRunning:
		return nil, &Error{Kind: FailState, Code: "unfinished_run", Msg: fmt.Sprintf("session %q has an unfinished run; resume it first", sessionID)}
	case session.StatusWaiting:
		return nil, waitingErr(x.st)
	}
	x.emitStart(r.newID(), session.RunStarted{Input: in.Text, Source: in.Source})
	if err := x.Commit(ctx); err != nil {
		return nil, err
	}
	return x.st, nil
}

// Resolution is a human's answer to a pending approval request.
type Resolution struct {
	// Decision is approve, reject or edit.
	Decision string
	// Arguments replace the call's arguments (edit, or approve with changes).
	Arguments []byte
	Reason    string
	By        string
}

// Resolve records a human's decision on a pending request. The session
// stays waiting until every pending request is resolved; then Resume
// continues the run. It works from any process, days later.
func (r *Runner) Resolve(ctx context.Context, sessionID, requestID string, res Resolution) (*session.Event, error) {
	x, err := r.begin(ctx, sessionID, nil)
	if err != nil {
		return nil, err
	}
	defer r.finish(x)
	q := x.st.Pending(requestID)
	if q == nil {
		return nil, &Error{Kind: FailInput, Code: "unknown_request",
			Msg: fmt.Sprintf("session %q has no pending request %q%s", sessionID, requestID, pendingList(x.st))}
	}
	d := session.ApprovalResolved{RequestID: requestID, Decision: res.Decision, Reason: res.Reason, By: res.By}
	switch res.Decision {
	case session.DecisionApprove, session.DecisionEdit:
		if len(res.Arguments) > 0 {
			if err := checkArgs(res.Arguments); err != nil {
				return nil, &Error{Kind: FailInput, Code: "bad_arguments", Msg: "edited arguments", Err: err}
			}
			if len(q.Calls) != 1 {
				return nil, &Error{Kind: FailInput, Code: "bad_arguments", Msg: "arguments can be edited only on a request for one call"}
			}
			d.Arguments = append([]byte(nil), res.Arguments...)
			d.Decision = session.DecisionEdit
		} else if res.Decision == session.DecisionEdit {
			return nil, &Error{Kind: FailInput, Code: "bad_arguments", Msg: "decision edit needs arguments"}
		}
	case session.DecisionReject:
	default:
		return nil, &Error{Kind: FailInput, Code: "bad_decision", Msg: fmt.Sprintf("decision %q is not approve, reject or edit", res.Decision)}
	}
	emit(x, d)
	if err := x.Commit(ctx); err != nil {
		return nil, err
	}
	return x.last, nil
}

func pendingList(st *State) string {
	if len(st.Requests) == 0 {
		return " (it has none)"
	}
	ids := make([]string, len(st.Requests))
	for i, q := range st.Requests {
		ids[i] = q.ID
	}
	return " (pending: " + strings.Join(ids, ", ") + ")"
}

// Result summarises a finished run.
type Result struct {
	SessionID string
	Status    session.Status
	Text      string
	Usage     model.Usage
	Events    []*session.Event
	// Err is the run's error event, when it failed.
	Err *session.Error
}

// Collect drains a Run or Resume sequence into a Result, keeping the
// committed events.
func Collect(seq iter.Seq2[*session.Event, error]) (*Result, error) {
	res := &Result{}
	for e, err := range seq {
		if err != nil {
			return res, err
		}
		if e.Seq == 0 {
			continue
		}
		res.SessionID = e.SessionID
		res.Events = append(res.Events, e)
		switch d := e.Data.(type) {
		case *session.Final:
			res.Text = d.Text
		case *session.Error:
			res.Err = d
		case *session.RunFinished:
			res.Status = d.Status
			res.Usage = d.Usage
		}
	}
	return res, nil
}
