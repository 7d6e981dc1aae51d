package agentrt

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Config configures a Runner. Zero values mean defaults.
type Config struct {
	// Store keeps sessions and their logs. Required. A store that
	// implements session.Leaser gives the runner leases (one owner per
	// session across processes); one that implements session.Follower lets
	// Watch see commits made by other processes, and one that implements
	// session.Relay their live tokens too (see NoRelay).
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
	// MaxHookedRequest bounds a request that a before-model hook changed,
	// recorded in its model_finished (sent) so that a person sees what the
	// model was sent (Runner.SentRequest): a larger one is recorded as its
	// SHA-256 only (sent_digest). Zero means DefaultMaxHookedRequest; a
	// negative value records digests only.
	MaxHookedRequest int
	// Deliver, when set, names the sources whose turns owe their messages
	// to the outside world (a channel's conversations): each commit of a
	// run of such a source that records its answer (final), a question
	// for a person (input_required), an answer to one (input_resolved) or
	// its failure or pause (run_finished) owes that event to the source
	// (session.Commit.Outbox), in its transaction; a deliverer (the
	// channel package's) sends it. The store must keep an outbox
	// (session.Outbox).
	Deliver func(source string) bool
	// MaxSubagentDepth bounds delegation: an agent's sub-agent's
	// sub-agent … at most this deep; zero means DefaultMaxSubagentDepth.
	MaxSubagentDepth int
	// StateCache is how many sessions' states the runner keeps between
	// runs (checked against the store before use), so that a long
	// conversation's next turn does not rebuild its state; zero means
	// DefaultStateCache, a negative value none.
	StateCache int
	// ControlPoll is how often, while it runs sessions, the runner looks
	// in the store for control requests (Runner.Cancel, Runner.Interrupt)
	// made to it by other processes: one read per interval for all its
	// sessions, in a store that implements session.Controller. Zero means
	// DefaultControlPoll.
	ControlPoll time.Duration
	// Observer, when not nil, sees the events of every commit and the end
	// of every run (see Observer): metrics and traces attach here.
	Observer Observer
	// NoRelay turns off relaying live events (tokens) through a store
	// that implements session.Relay (Postgres): this runner then neither
	// publishes the tokens of its runs to the watchers of other processes
	// nor shows theirs to its own, whose watchers see only committed
	// events of runs elsewhere.
	NoRelay bool
	// Engine, when set, runs the runs elsewhere (see Engine): this runner
	// starts and continues them, and its handles follow them; nil runs
	// them in this process.
	Engine Engine
	// EngineName names the engine of this runner's runs in their
	// run_started and run_resumed events, and so in the sessions' state
	// (State.Engine): Recover continues only the runs of its own engine.
	// Empty: the Engine's name when it has one (a Name method), else
	// none. An engine's worker, which steps the runs itself, names the
	// engine it works for.
	EngineName string
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
	gaveUp    atomic.Bool      // Shutdown left runs behind that ignored their cancellation
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
	maxDepth  int                      // of delegation (Config.MaxSubagentDepth)
	maxHooked int                      // bytes of a hooked request recorded (Config.MaxHookedRequest)
	deliver   func(source string) bool // Config.Deliver
	observer  Observer

	// execs holds *Exec for reuse: an Exec carries a run's buffers, the
	// request's message list among them, which would otherwise be
	// allocated and grown again by every run.
	execs sync.Pool

	hub hub // watchers in this process, by session

	// hooks of each agent merged with the runner's, in running order.
	agentHooks map[string]*Hooks

	reg      registry     // the sessions in use in this runner
	revive   *reviver     // runs the store's refusal of a write stopped, resumed here
	stepping stepping     // sessions driven step by step, between steps
	control  controlPlane // control requests from other processes
	engine   Engine       // Config.Engine
	// engineName is Config.EngineName: the engine recorded in the runs.
	engineName string
	remote     remotes // runs handed to the engine, followed here
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
		hub:       hub{topics: make(map[skey]*topic)},
		observer:  cfg.Observer,
	}
	r.reg.active = make(map[skey]*Run)
	r.engine = cfg.Engine
	r.engineName = cfg.EngineName
	if n, ok := cfg.Engine.(interface{ Name() string }); ok && r.engineName == "" {
		r.engineName = n.Name()
	}
	r.remote.ctx, r.remote.cancel = context.WithCancel(context.Background())
	r.revive = newReviver(r)
	r.leaser, _ = cfg.Store.(session.Leaser)
	r.follower, _ = cfg.Store.(session.Follower)
	if rl, ok := cfg.Store.(session.Relay); ok && !cfg.NoRelay {
		r.hub.relay = newRelay(rl, &r.hub)
	}
	if r.leaser != nil {
		r.control.ctrl, _ = cfg.Store.(session.Controller)
	}
	r.control.reg = &r.reg
	switch {
	case cfg.ControlPoll < 0:
		return nil, fmt.Errorf("agentrt: ControlPoll %v is negative", cfg.ControlPoll)
	case cfg.ControlPoll == 0:
		r.control.poll = DefaultControlPoll
	default:
		r.control.poll = cfg.ControlPoll
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
	r.maxHooked = cmp.Or(cfg.MaxHookedRequest, DefaultMaxHookedRequest)
	if cfg.Deliver != nil {
		if _, ok := cfg.Store.(session.Outbox); !ok {
			return nil, fmt.Errorf("agentrt: Config.Deliver needs a store that keeps an outbox (session.Outbox); %T does not", cfg.Store)
		}
		r.deliver = cfg.Deliver
	}
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
	r.control.owner = r.owner
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

// NewID returns a fresh id from the runner's id source (Config.NewID).
func (r *Runner) NewID() string { return r.newID() }

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
	return "", &Error{Kind: FailInput, Code: CodeNoAgent,
		Msg: fmt.Sprintf("choose an agent (configured: %s)", strings.Join(r.AgentNames(), ", "))}
}

func (r *Runner) agent(name string) (*Agent, error) {
	if a, ok := r.agents[name]; ok {
		return a, nil
	}
	return nil, &Error{Kind: FailInput, Code: CodeUnknownAgent,
		Msg: fmt.Sprintf("unknown agent %q (known: %s)", name, strings.Join(r.AgentNames(), ", "))}
}
