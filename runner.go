package agentrt

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Config configures a Runner. Zero values mean defaults.
type Config struct {
	// Store keeps sessions and their logs. Required. A store that
	// implements session.Leaser gives the runner leases (one owner per
	// session across processes); one that implements session.Follower lets
	// Watch see commits made by other processes.
	Store session.Store
	// Agents the runner can run, by name.
	Agents []*Agent
	// DefaultAgent is the agent a new session belongs to when the caller
	// names none (see Runner.DefaultAgent); "" means the agent named
	// "assistant", or the only agent when there is one.
	DefaultAgent string
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
	// last state snapshot before a commit writes a new one. Zero means
	// DefaultSnapshotEvery, or the number of messages in the session's
	// history if that is more: a snapshot holds the whole history, so
	// spacing them by its length keeps their cost per event constant as a
	// conversation grows. Loading a session replays at most about that
	// many events after its snapshot.
	SnapshotEvery int
	// Owner names this runner in the leases it takes; "" means
	// host:pid:random, which lets a process on the same host see that the
	// owner of a lease died and take the session over at once.
	Owner string
	// LeaseTTL is how long a lease lasts unless renewed (the runner renews
	// its leases every third of it); zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// MaxRecoveries is how many times a run may be resumed after its
	// process stopped, without making progress in between, before it is
	// failed with reason crash_loop; zero means DefaultMaxRecoveries, a
	// negative value no limit.
	MaxRecoveries int
	// MaxSubagentDepth bounds delegation: an agent's sub-agent's
	// sub-agent … at most this deep; zero means DefaultMaxSubagentDepth.
	MaxSubagentDepth int
	// StateCache is how many sessions' states the runner keeps between
	// runs (checked against the store before use), so that a long
	// conversation's next turn does not rebuild its state; zero means
	// DefaultStateCache, a negative value none.
	StateCache int
}

// DefaultSnapshotEvery is the snapshot cadence when Config.SnapshotEvery
// is zero. A snapshot holds the whole state, history included, so writing
// one every step or every run would make a long conversation's writes grow
// with the square of its length; replaying a few dozen events is cheap.
const DefaultSnapshotEvery = 64

// Runner runs agents over durable sessions. It is safe for concurrent use.
//
// A session runs at most once at a time: within a Runner (a second run of
// a busy session fails with code busy) and, with a store that has leases,
// across processes (code lease_held says who holds it and until when).
// Commits carry the lease's fencing token, so a runner that lost its
// session to another cannot write to it.
type Runner struct {
	store     session.Store
	leaser    session.Leaser   // nil if the store has no leases
	follower  session.Follower // nil if it cannot follow
	agents    map[string]*Agent
	defAgent  string            // Config.DefaultAgent
	executors map[Kind]Executor // Config.Executors
	hooks     Hooks
	now       func() time.Time
	newID     func() string
	snapEvery int64
	snapGrow  bool // snapEvery grows with the history (SnapshotEvery zero)
	cache     *stateCache
	tokens    tokenCounter // for compaction.max_tokens
	wallClock bool         // now is time.Now (see Exec.now)
	owner     string
	leaseTTL  time.Duration
	maxRecov  int
	maxDepth  int // of delegation (Config.MaxSubagentDepth)

	// execs holds *Exec for reuse: an Exec carries a run's buffers, the
	// request's message list among them, which would otherwise be
	// allocated and grown again by every run.
	execs sync.Pool

	hub hub // watchers in this process, by session

	// hooks of each agent merged with the runner's, in running order.
	agentHooks map[string]*Hooks

	mu     sync.Mutex
	active map[skey]*Run  // sessions with a run (or a resolution) in progress; guarded by mu
	closed bool           // guarded by mu
	runs   sync.WaitGroup // runs started by Start and StartResume
}

// NewRunner returns a Runner.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("agentrt: Config.Store is required")
	}
	r := &Runner{
		store:     cfg.Store,
		agents:    make(map[string]*Agent, len(cfg.Agents)),
		executors: make(map[Kind]Executor, len(cfg.Executors)),
		hooks:     cfg.Hooks,
		now:       cfg.Now,
		newID:     cfg.NewID,
		active:    make(map[skey]*Run),
		hub:       hub{topics: make(map[skey]*topic)},
	}
	r.leaser, _ = cfg.Store.(session.Leaser)
	r.follower, _ = cfg.Store.(session.Follower)
	r.hooks.sort()
	if r.now == nil {
		r.now, r.wallClock = time.Now, true
	}
	if r.newID == nil {
		r.newID = newIDSource()
	}
	switch {
	case cfg.SnapshotEvery < 0:
		return nil, fmt.Errorf("agentrt: SnapshotEvery %d is negative", cfg.SnapshotEvery)
	case cfg.SnapshotEvery == 0:
		r.snapEvery, r.snapGrow = DefaultSnapshotEvery, true
	default:
		r.snapEvery = int64(cfg.SnapshotEvery)
	}
	switch {
	case cfg.LeaseTTL < 0:
		return nil, fmt.Errorf("agentrt: LeaseTTL %v is negative", cfg.LeaseTTL)
	case cfg.LeaseTTL == 0:
		r.leaseTTL = DefaultLeaseTTL
	default:
		r.leaseTTL = cfg.LeaseTTL
	}
	switch {
	case cfg.StateCache == 0:
		r.cache = newStateCache(DefaultStateCache)
	case cfg.StateCache > 0:
		r.cache = newStateCache(cfg.StateCache)
	}
	r.maxDepth = cmp.Or(cfg.MaxSubagentDepth, DefaultMaxSubagentDepth)
	if cfg.MaxSubagentDepth < 0 {
		return nil, fmt.Errorf("agentrt: max subagent depth %d is negative", cfg.MaxSubagentDepth)
	}
	r.maxRecov = cfg.MaxRecoveries
	if r.maxRecov == 0 {
		r.maxRecov = DefaultMaxRecoveries
	}
	r.owner = cfg.Owner
	if r.owner == "" {
		r.owner = ownerID()
	}
	for k, e := range cfg.Executors {
		if e == nil {
			return nil, fmt.Errorf("agentrt: nil executor for %q", k)
		}
		r.executors[k] = e
	}
	for _, a := range cfg.Agents {
		if err := a.init(); err != nil {
			return nil, fmt.Errorf("agentrt: %w", err)
		}
		if _, dup := r.agents[a.Name]; dup {
			return nil, fmt.Errorf("agentrt: two agents named %q", a.Name)
		}
		r.agents[a.Name] = a
	}
	if cfg.DefaultAgent != "" {
		if _, ok := r.agents[cfg.DefaultAgent]; !ok {
			return nil, fmt.Errorf("agentrt: default agent %q is not an agent of this runner (agents: %s)",
				cfg.DefaultAgent, strings.Join(r.AgentNames(), ", "))
		}
		r.defAgent = cfg.DefaultAgent
	}
	if err := checkSubagents(r.agents); err != nil {
		return nil, fmt.Errorf("agentrt: %w", err)
	}
	r.agentHooks = make(map[string]*Hooks, len(r.agents))
	for name, a := range r.agents {
		r.agentHooks[name] = merged(&r.hooks, &a.Hooks)
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

// Owner returns the name this runner takes leases under.
func (r *Runner) Owner() string { return r.owner }

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

// DefaultAgent returns the agent a session belongs to when the caller
// names none: Config.DefaultAgent, else the agent named "assistant", else
// the only agent. With several agents and none of those, it is an error
// (code no_agent) listing them.
func (r *Runner) DefaultAgent() (string, error) {
	switch {
	case r.defAgent != "":
		return r.defAgent, nil
	case r.agents["assistant"] != nil:
		return "assistant", nil
	case len(r.agents) == 1:
		for name := range r.agents {
			return name, nil
		}
	}
	return "", &Error{Kind: FailInput, Code: "no_agent",
		Msg: fmt.Sprintf("choose an agent (configured: %s)", strings.Join(r.AgentNames(), ", "))}
}

func (r *Runner) agent(name string) (*Agent, error) {
	if a, ok := r.agents[name]; ok {
		return a, nil
	}
	return nil, &Error{Kind: FailInput, Code: "unknown_agent",
		Msg: fmt.Sprintf("unknown agent %q (known: %s)", name, strings.Join(r.AgentNames(), ", "))}
}

// DeleteSession deletes a session — its events, snapshot and row — and
// forgets the state this runner keeps of it. A session with a run in
// progress in this runner is busy: cancel the run first.
func (r *Runner) DeleteSession(ctx context.Context, id string) error {
	k := keyOf(ctx, id)
	if err := r.claim(k, nil); err != nil {
		return err
	}
	defer r.unclaim(k)
	r.cache.take(k)
	if err := r.store.DeleteSession(ctx, id); err != nil {
		return notFound(id, err)
	}
	return nil
}

// CreateSession creates a session for the named agent. An empty id gets a
// fresh one.
func (r *Runner) CreateSession(ctx context.Context, agent, id string, metadata map[string]string) (*session.Session, error) {
	s, _, _, err := r.createSession(ctx, agent, id, metadata, false)
	return s, err
}

// createSession is CreateSession; with leased, in a store that can
// (session.LeasedCreator), it takes this runner's lease of the session,
// creating the session if it does not exist: it returns the session as
// stored, the lease, and whether the session is new (the lease is nil
// otherwise).
func (r *Runner) createSession(ctx context.Context, agent, id string, metadata map[string]string, leased bool) (*session.Session, *session.Lease, bool, error) {
	if _, err := r.agent(agent); err != nil {
		return nil, nil, false, err
	}
	if id == "" {
		id = r.newID()
	}
	now := r.now()
	s := &session.Session{ID: id, Agent: agent, Status: session.StatusIdle, Metadata: metadata, CreatedAt: now, UpdatedAt: now}
	var (
		lease *session.Lease
		made  = true
		err   error
	)
	if lc, ok := r.store.(session.LeasedCreator); ok && leased && r.leaser != nil {
		var (
			l   session.Lease
			got *session.Session
		)
		if got, l, made, err = lc.CreateOrAcquire(ctx, s, r.owner, r.leaseTTL); err == nil {
			s, lease = got, &l
		}
	} else {
		err = r.store.CreateSession(ctx, s)
	}
	if err != nil {
		if errors.Is(err, session.ErrExists) {
			return nil, nil, false, &Error{Kind: FailInput, Code: "session_exists", Msg: fmt.Sprintf("session %q already exists", id), Err: err}
		}
		return nil, nil, false, &Error{Kind: FailStore, Msg: "create session", Err: err}
	}
	return s, lease, made, nil
}

// newState returns the State of a new session of agent, with its
// policy's state.
func (r *Runner) newState(id, agent string) (*State, error) {
	var p Policy = React{}
	if a, ok := r.agents[agent]; ok && a.Policy != nil {
		p = a.Policy
	}
	st := NewState(id, agent)
	if err := st.AttachPolicy(p); err != nil {
		return nil, &Error{Kind: FailPolicy, Msg: "session " + id, Err: err}
	}
	return st, nil
}

// created is a session's lease a run begins with, taken as it made sure
// the session exists (see createSession): new says whether it created the
// session.
type created struct {
	lease session.Lease
	agent string
	new   bool
	sess  *session.Session // as stored, when it existed
}

// Load rebuilds a session's state: its snapshot, then the events after it,
// with the state of the agent's policy if it keeps one.
func (r *Runner) Load(ctx context.Context, id string) (*State, error) {
	sess, err := r.store.GetSession(ctx, id)
	if err != nil {
		return nil, notFound(id, err)
	}
	return r.loadFrom(ctx, sess)
}

// loadFrom is Load of the session whose row is sess.
func (r *Runner) loadFrom(ctx context.Context, sess *session.Session) (*State, error) {
	id := sess.ID
	var p Policy = React{}
	if a, ok := r.agents[sess.Agent]; ok && a.Policy != nil {
		p = a.Policy
	}
	if sess.LastSeq == 0 {
		return r.newState(id, sess.Agent) // a new session: no snapshot, no events to read
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
	if err := st.AttachPolicy(p); err != nil {
		return nil, &Error{Kind: FailPolicy, Msg: "session " + id, Err: err}
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

// skey names a session in the runner's maps: its tenant and id.
type skey struct{ tenant, id string }

func keyOf(ctx context.Context, id string) skey { return skey{session.TenantOf(ctx), id} }

// claim marks session k as having a run (h, which may be nil for a
// resolution) in progress in this runner.
func (r *Runner) claim(k skey, h *Run) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &Error{Kind: FailState, Code: "closed", Msg: "the runner is closed"}
	}
	if _, busy := r.active[k]; busy {
		return &Error{Kind: FailState, Code: "busy", Msg: fmt.Sprintf("session %q is already running in this process", k.id)}
	}
	r.active[k] = h
	return nil
}

func (r *Runner) unclaim(k skey) {
	r.mu.Lock()
	delete(r.active, k)
	r.mu.Unlock()
}

// Active returns the run of session id (of ctx's tenant) in progress in
// this runner, if any.
func (r *Runner) Active(ctx context.Context, id string) (*Run, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.active[keyOf(ctx, id)]
	return h, h != nil
}

// begin claims session id, takes its lease and loads it. On success the
// caller owns x and ends with r.finish(x). With agent not empty, a session
// that does not exist is created for it, in the write that takes its
// lease (see ensureSession), once the session is claimed: no other run of
// this runner can come between.
func (r *Runner) begin(ctx context.Context, id string, h *Run, waitLease bool, agent string) (*Exec, error) {
	k := keyOf(ctx, id)
	if err := r.claim(k, h); err != nil {
		return nil, err
	}
	var into *leaseKeeper
	var spare *topic
	if h != nil {
		into, spare = &h.lease, &h.topic
	}
	var (
		created *created
		lease   *leaseKeeper
		st      *State
		err     error
	)
	if agent != "" {
		if created, err = r.ensureSession(ctx, id, agent); err != nil {
			r.unclaim(k)
			return nil, err
		}
	}
	switch {
	case created != nil && created.new:
		// Created leased: nobody else can have written to it since (a
		// state cached of a session of that id was deleted with it).
		r.cache.take(k)
		lease = r.keepLease(ctx, created.lease, into)
		st, err = r.newState(id, created.agent)
	case created != nil:
		lease = r.keepLease(ctx, created.lease, into)
		st, err = r.loadAs(ctx, k, created.sess)
	default:
		if lease, err = r.acquireLease(ctx, id, waitLease, into); err != nil {
			r.unclaim(k)
			return nil, err
		}
		st, err = r.loadCached(ctx, k)
	}
	if err == nil {
		var a *Agent
		if a, err = r.agent(st.Agent); err == nil {
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
	}
	lease.stop()
	r.unclaim(k)
	return nil, err
}

// loadCached is Load, from the cached State of the session when it is
// current (or can be brought up to date with the events after it).
func (r *Runner) loadCached(ctx context.Context, k skey) (*State, error) {
	return r.loadAs(ctx, k, nil)
}

// loadAs is loadCached with the session's row as the store has it, sess,
// when the caller has it (nil: read it).
func (r *Runner) loadAs(ctx context.Context, k skey, sess *session.Session) (*State, error) {
	st := r.cache.take(k)
	if sess == nil {
		var err error
		if sess, err = r.store.GetSession(ctx, k.id); err != nil {
			return nil, notFound(k.id, err)
		}
	}
	if st == nil {
		return r.loadFrom(ctx, sess)
	}
	switch {
	case sess.LastSeq == st.Seq && sess.Agent == st.Agent:
		return st, nil
	case sess.LastSeq > st.Seq && sess.Agent == st.Agent && sess.LastSeq-st.Seq <= r.snapEvery:
		// Another process wrote since: its events, not the whole state.
		if err := r.replay(ctx, st); err != nil {
			return nil, err
		}
		return st, nil
	}
	return r.loadFrom(ctx, sess)
}

// beginWaiting is begin for a short write (a resolution), which waits for
// the lease as long as ctx allows, up to a bound.
func (r *Runner) beginWaiting(ctx context.Context, id string, h *Run) (*Exec, error) {
	wctx, cancel := context.WithTimeout(ctx, resolveWait)
	defer cancel()
	for {
		x, err := r.begin(wctx, id, h, true, "")
		var re *Error
		if err == nil || !errors.As(err, &re) || re.Code != "busy" || wctx.Err() != nil {
			return x, err
		}
		// A run of this process holds the session; it lets go of it when it
		// stops, which for a waiting session is at once.
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// resolveWait bounds how long Resolve waits for a session's lease.
const resolveWait = 15 * time.Second

// finish ends what begin started: the lease is released, the session is
// free again in this runner, the run's outcome is recorded, and x goes
// back to the pool.
func (r *Runner) finish(x *Exec) {
	if len(x.pending) == 0 && !x.dirty {
		// Everything this run applied is in the store: keep the state for
		// the session's next run.
		r.cache.put(x.key, x.st)
	}
	x.lease.stop()
	r.hub.release(x.topic)
	r.unclaim(x.key)
	if h := x.handle; h != nil {
		h.finish(x.st)
		h.cancel(nil)
	}
	r.putExec(x)
}

// Input is one user turn.
type Input struct {
	Text string
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
	// Overrides change the agent for this run only (seed 000's execute
	// dict), recorded in run_started.
	Overrides *Overrides
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
// token events (Seq 0), which are yielded as the model streams. A failure
// of the run itself is recorded as an error event and a run_finished event
// with status failed, not yielded as an error; the sequence yields a
// non-nil error (its last value) only when the run could not start or its
// events could not be stored.
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

// background runs x's run on a tracked goroutine.
func (r *Runner) background(ctx context.Context, x *Exec) *Run {
	h := x.handle
	r.runs.Add(1)
	go func() {
		defer r.runs.Done()
		r.drive(ctx, x)
	}()
	return h
}

// startTurn begins a turn: the session claimed and leased, the turn-start
// hooks run, run_started emitted (it is committed with the first step's
// events: one transaction fewer per turn; a crash before that commit loses
// a turn nobody has seen begin). It returns the run's context.
func (r *Runner) startTurn(ctx context.Context, id string, in Input, detached bool) (*Exec, context.Context, error) {
	if strings.TrimSpace(in.Text) == "" {
		return nil, nil, &Error{Kind: FailInput, Code: "empty_input", Msg: "input is empty"}
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
		return r.abandon(x, &Error{Kind: FailInput, Code: "wrong_agent",
			Msg: fmt.Sprintf("session %q belongs to agent %q, not %q", id, x.st.Agent, in.Agent)})
	}
	switch x.st.Status {
	case session.StatusRunning:
		return r.abandon(x, &Error{Kind: FailState, Code: "unfinished_run",
			Msg: fmt.Sprintf("session %q has an unfinished run (the process running it stopped); resume it first", id)})
	case session.StatusWaiting:
		return r.abandon(x, waitingErr(x.st))
	}
	runID := r.newID()
	h.id, h.after = runID, x.st.Seq
	info := HookInfo{Tenant: x.key.tenant, SessionID: id, RunID: runID, Agent: x.agent.Name, Turn: x.st.Turn + 1}
	if err := x.hooks.turnStart(ctx, info, in.Text); err != nil {
		return r.abandon(x, err)
	}
	var plan json.RawMessage
	if in.Plan != nil {
		if _, ok := x.agent.Policy.(PlanExecute); !ok {
			return r.abandon(x, &Error{Kind: FailInput, Code: "bad_plan", Msg: fmt.Sprintf("agent %q does not execute plans (its strategy is not plan_execute)", x.agent.Name)})
		}
		if err := x.agent.checkPlan(in.Plan, true); err != nil {
			return r.abandon(x, err)
		}
		plan, _ = json.Marshal(in.Plan)
	}
	started := session.RunStarted{Input: in.Text, Source: in.Source, Parent: in.Parent}
	if o := in.Overrides; o != nil {
		if o.MaxSteps < 0 {
			return r.abandon(x, &Error{Kind: FailInput, Code: "bad_overrides", Msg: fmt.Sprintf("overrides: max_steps %d is negative", o.MaxSteps)})
		}
		started.Overrides = &session.Overrides{MaxSteps: o.MaxSteps}
		if o.Profile != (Profile{}) {
			started.Overrides.Profile, _ = json.Marshal(o.Profile)
		}
	}
	x.emitStart(runID, started)
	if plan != nil {
		emit(x, session.PlanCreated{Plan: plan, Source: "caller"})
	}
	x.lease.watch(h.cancel)
	return x, rctx, nil
}

// ensureSession creates session id for agent if it does not exist. In a
// store that can (session.LeasedCreator) it takes the session's lease as
// it does, new session or not, and returns it for the run to begin with;
// nil otherwise, or when another owner holds the lease (the run's own
// acquisition says so, or takes over a dead owner's). It does not look the
// session up first: a new session's turn begins with one write and no
// read, and one that exists with the write that takes its lease and
// reads it back.
func (r *Runner) ensureSession(ctx context.Context, id, agent string) (*created, error) {
	if id == "" {
		return nil, &Error{Kind: FailInput, Code: "no_session", Msg: "no session id"}
	}
	if r.cache.has(keyOf(ctx, id)) {
		// It ran here: its lease is taken as usual and the cached state
		// checked against the store (a read, where taking the lease
		// here would put it on the writer).
		return nil, nil
	}
	sess, lease, made, err := r.createSession(ctx, agent, id, nil, true)
	var re *Error
	switch {
	case errors.As(err, &re) && (re.Code == "session_exists" || errors.Is(err, session.ErrLeaseHeld)):
		return nil, nil
	case err != nil:
		return nil, err
	case lease == nil:
		return nil, nil
	}
	return &created{lease: *lease, agent: agent, new: made, sess: sess}, nil
}

// beginRun begins a run of session id: its handle and context, the
// session claimed, leased and loaded (created for agent if it does not
// exist and agent is not empty: see begin). abandon undoes it all, for a
// run that turns out not to be possible.
func (r *Runner) beginRun(ctx context.Context, id string, detached bool, agent string) (*Exec, context.Context, error) {
	rctx, h := r.runContext(ctx, id, detached)
	x, err := r.begin(ctx, id, h, false, agent)
	if err != nil {
		h.cancel(nil)
		return nil, nil, err
	}
	return x, rctx, nil
}

// abandon undoes beginRun and returns err.
func (r *Runner) abandon(x *Exec, err error) (*Exec, context.Context, error) {
	h := x.handle
	x.handle = nil
	r.finish(x)
	h.cancel(nil)
	return nil, nil, err
}

// runContext returns a run's context and handle: canceled by the caller's
// ctx, unless detached, and by the handle's Cancel and a lost lease.
func (r *Runner) runContext(ctx context.Context, id string, detached bool) (context.Context, *Run) {
	base := ctx
	if detached {
		base = context.WithoutCancel(ctx)
	}
	rctx, cancel := context.WithCancelCause(base)
	h := newRun(r, id, 0, cancel)
	h.tenant = session.TenantOf(ctx)
	return rctx, h
}

func waitingErr(st *State) error {
	ids := make([]string, len(st.Requests))
	for i, q := range st.Requests {
		ids[i] = q.ID
	}
	return &Error{Kind: FailState, Code: "waiting",
		Msg: fmt.Sprintf("session %q is waiting for a human decision on request %s", st.SessionID, strings.Join(ids, ", "))}
}

// Reasons of run_resumed.
const (
	ResumeRecovered = "recovered" // the process running the session stopped
	ResumeApproval  = "approval"  // every pending request was resolved
	ResumePause     = "resume"    // a paused run goes on
	ResumeRetry     = "retry"     // a failed, canceled or interrupted run is tried again
)

// Resume continues a session whose run stopped before it finished: after a
// crash (status running), once every pending request is resolved (status
// waiting), after a pause at a limit, or after a failure, cancellation or
// interruption. Completed tool calls are not run again. It runs on the
// calling goroutine; its events, and leaving the loop, are like Run's.
func (r *Runner) Resume(ctx context.Context, sessionID string) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		x, rctx, err := r.startResume(ctx, sessionID, false)
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
	x, rctx, err := r.startResume(ctx, sessionID, true)
	if err != nil {
		return nil, err
	}
	if err := x.Commit(rctx); err != nil {
		r.finish(x)
		return nil, err
	}
	return r.background(rctx, x), nil
}

// startResume begins a resumption: run_resumed emitted, or, for a session
// that crashed its process too often without progress, its failure.
func (r *Runner) startResume(ctx context.Context, id string, detached bool) (*Exec, context.Context, error) {
	x, rctx, err := r.beginRun(ctx, id, detached, "")
	if err != nil {
		return nil, nil, err
	}
	h := x.handle
	st := x.st
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
		return r.abandon(x, &Error{Kind: FailState, Code: "nothing_to_resume",
			Msg: fmt.Sprintf("session %q has nothing to resume (status %s)", id, st.Status)})
	}
	h.id, h.after = st.RunID, st.Seq
	if err := x.hooks.turnStart(ctx, x.info(), ""); err != nil {
		return r.abandon(x, err)
	}
	if reason == ResumeRecovered && r.maxRecov > 0 && st.Recoveries >= r.maxRecov {
		// Each of the last resumptions died before the run got anywhere:
		// another would most likely crash its process again.
		e := &Error{Kind: FailState, Code: "crash_loop", Msg: fmt.Sprintf(
			"session %s was resumed %d times after its process stopped, without progress in between; "+
				"it is stopped so as not to crash another process (agentrt resume %s tries again)", id, st.Recoveries, id)}
		emit(x, session.Error{Code: e.ErrorCode(), Message: e.Error()})
		x.End(session.StatusFailed, "crash_loop")
		return x, rctx, nil
	}
	emit(x, session.RunResumed{Reason: reason, From: st.Status})
	x.lease.watch(h.cancel)
	return x, rctx, nil
}

// drive runs x's run until it stops, then ends it.
func (r *Runner) drive(ctx context.Context, x *Exec) {
	defer r.finish(x)
	r.loop(ctx, x)
}

// loop steps until the run stops. Its steps commit lazily (see step).
func (r *Runner) loop(ctx context.Context, x *Exec) {
	x.lazy = true
	for x.st.Status == session.StatusRunning {
		if reason := x.handle.interrupted(); reason != "" {
			x.interrupt(ctx, reason)
			return
		}
		if err := r.stepChecked(ctx, x); err != nil {
			if reason := x.handle.interrupted(); reason != "" && (ctx.Err() == nil || errors.Is(context.Cause(ctx), errInterrupted)) {
				// The model call Interrupt abandoned, or a failure at the
				// moment of the interruption: either way the turn ends
				// interrupted (unless the store failed, when nothing can
				// be written).
				if re := AsError(err); re.Kind != FailStore && re.Code != "lease_lost" {
					x.interrupt(ctx, reason)
					return
				}
			}
			x.fail(ctx, err)
			return
		}
		if x.stopped && x.st.Status == session.StatusRunning {
			x.fail(ctx, &Error{Kind: FailCanceled, Code: "canceled", Msg: "the caller stopped reading events"})
			return
		}
	}
}

// stepChecked is step, failing a step that records nothing while the run
// goes on: a policy that finds nothing to do would otherwise loop forever.
func (r *Runner) stepChecked(ctx context.Context, x *Exec) error {
	before := x.st.Seq
	ins, err := r.step(ctx, x)
	if err != nil {
		return err
	}
	if x.st.Status == session.StatusRunning && x.st.Seq == before {
		return &Error{Kind: FailPolicy, Code: "no_progress",
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
func (r *Runner) step(ctx context.Context, x *Exec) (Instruction, error) {
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
	ins, err := p.Next(ctx, x.agent, x.st)
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
		return ins, &Error{Kind: FailConfig, Code: "no_executor", Msg: fmt.Sprintf("no executor for instruction %q", ins.Kind)}
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
// abandoned model call): the calls of the current batch that have not run
// are answered "not run", then an interrupted event and run_finished.
func (x *Exec) interrupt(ctx context.Context, reason string) {
	for i := range x.st.Calls {
		c := x.st.Calls[i]
		if c.Done || c.Approval == CallPending {
			continue
		}
		emit(x, session.ToolResult{CallID: c.Call.ID, Name: c.Call.Name,
			Error: "not run: the turn was interrupted (" + reason + ")"})
	}
	emit(x, session.Interrupted{Reason: reason})
	x.End(session.StatusInterrupted, reason)
	cctx, cancel := afterEnd(ctx)
	defer cancel()
	if err := x.Commit(cctx); err != nil {
		x.yieldErr(err)
	}
}

// Step decides and executes one instruction on st, a state returned by
// Load (or Begin) whose status is running, and returns the events it
// committed. It is for callers that drive a run one step at a time; live
// token events are not returned. A failure of the run is recorded, as in
// Run, and ends the run; the error is non-nil when the step's events could
// not be stored, or the session is busy or leased elsewhere: st is then
// ahead of the store, and the caller reloads the session.
func (r *Runner) Step(ctx context.Context, st *State) ([]*session.Event, error) {
	if st.Status != session.StatusRunning {
		return nil, &Error{Kind: FailState, Code: "not_running", Msg: fmt.Sprintf("session %q is %s, not running", st.SessionID, st.Status)}
	}
	a, err := r.agent(st.Agent)
	if err != nil {
		return nil, err
	}
	sctx, h := r.runContext(ctx, st.SessionID, false)
	k := keyOf(ctx, st.SessionID)
	if err := r.claim(k, h); err != nil {
		return nil, err
	}
	lease, err := r.acquireLease(ctx, st.SessionID, false, &h.lease)
	if err != nil {
		r.unclaim(k)
		return nil, err
	}
	x := r.newExec(a, st)
	x.lease, x.handle, x.topic, x.key = lease, h, r.hub.retain(k, &h.topic), k
	x.fence = lease.token()
	var out []*session.Event
	x.yield = func(e *session.Event, err error) bool {
		if e != nil && e.Seq != 0 {
			out = append(out, e)
		}
		return true
	}
	if err := r.stepChecked(sctx, x); err != nil {
		x.fail(sctx, err)
	}
	h.mu.Lock()
	err = h.err
	h.mu.Unlock()
	if err != nil && AsError(err).Kind != FailStore && AsError(err).Code != "lease_lost" {
		err = nil // recorded as the run's failure
	}
	r.finish(x)
	return out, err
}

// Begin commits the start of a turn (run_started) and returns the state
// without running it, for callers that drive the run with Step.
func (r *Runner) Begin(ctx context.Context, sessionID string, in Input) (*State, error) {
	x, _, err := r.startTurn(ctx, sessionID, in, false)
	if err != nil {
		return nil, err
	}
	st := x.st
	err = x.Commit(ctx)
	x.handle.cancel(nil)
	x.handle = nil
	r.finish(x)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Close stops the runs this runner started in the background (Start,
// StartResume, Recover) — they are canceled, store what they have in hand
// and release their sessions — and waits for them until ctx ends. Later
// runs are refused. Close is idempotent.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	for _, h := range r.active {
		if h != nil {
			h.Cancel()
		}
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
