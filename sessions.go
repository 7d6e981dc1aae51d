package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// The session registry: which sessions this runner is using, how a
// session comes to exist, and how its state is loaded (from the cache of
// the states it ran last, or from the store).

// skey names a session in the runner's maps: its tenant and id.
type skey struct{ tenant, id string }

func keyOf(ctx context.Context, id string) skey { return skey{session.TenantOf(ctx), id} }

// registry records the sessions this runner is using: each has at most one
// user at a time in the runner — a run, a driver stepping it, or a short
// write (a resolution, a deletion, a cancellation) — and every use is
// counted from its claim to its release, so that Close waits for all of
// them, the foreground ones included.
type registry struct {
	mu     sync.Mutex
	active map[skey]*Run // guarded by mu; a nil *Run is a short write
	closed bool          // guarded by mu
	uses   sync.WaitGroup
}

// claim marks session k as used by h (nil for a short write).
func (g *registry) claim(k skey, h *Run) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return &Error{Kind: FailState, Code: CodeClosed, Msg: "the runner is closed"}
	}
	if _, busy := g.active[k]; busy {
		return &Error{Kind: FailState, Code: CodeBusy, Msg: fmt.Sprintf("session %q is already running in this process", k.id)}
	}
	g.active[k] = h
	g.uses.Add(1)
	return nil
}

// ending returns, when session k is held by a run letting go of it
// (Run.letGo), a channel closed once the run has; nil otherwise.
func (g *registry) ending(k skey) <-chan struct{} {
	g.mu.Lock()
	h := g.active[k]
	g.mu.Unlock()
	if h == nil || !h.letting() {
		return nil
	}
	return h.Done()
}

// enter counts a use of the runner that is no session's (a goroutine of
// its own, which Close waits for); it reports false once the registry is
// closed. The use ends with done.
func (g *registry) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.uses.Add(1)
	return true
}

// release ends a claim: unclaim, then done.
func (g *registry) release(k skey) {
	g.unclaim(k)
	g.uses.Done()
}

// unclaim frees session k for another use in this runner; the claim
// still counts, for Close, until done.
func (g *registry) unclaim(k skey) {
	g.mu.Lock()
	delete(g.active, k)
	g.mu.Unlock()
}

// done ends the count of a claim that was unclaimed.
func (g *registry) done() { g.uses.Done() }

// run returns the run of session k, if it has one.
func (g *registry) run(k skey) *Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active[k]
}

// idle reports whether no session is in use.
func (g *registry) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.active) == 0
}

// close refuses later claims and returns the runs in progress.
func (g *registry) close() []*Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	var runs []*Run
	for _, h := range g.active {
		if h != nil {
			runs = append(runs, h)
		}
	}
	return runs
}

// Active returns the run of session id (of ctx's tenant) in progress in
// this runner, if any.
func (r *Runner) Active(ctx context.Context, id string) (*Run, bool) {
	h := r.reg.run(keyOf(ctx, id))
	return h, h != nil
}

// CreateSession creates a session for the named agent ("" for the default
// agent). An empty id gets a fresh one.
func (r *Runner) CreateSession(ctx context.Context, agent, id string, metadata map[string]string) (*session.Session, error) {
	if agent == "" {
		var err error
		if agent, err = r.DefaultAgent(); err != nil {
			return nil, err
		}
	}
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
			return nil, nil, false, &Error{Kind: FailInput, Code: CodeSessionExists, Msg: fmt.Sprintf("session %q already exists", id), Err: err}
		}
		return nil, nil, false, &Error{Kind: FailStore, Msg: "create session", Err: err}
	}
	return s, lease, made, nil
}

// created is a session's lease a run begins with, taken as it made sure
// the session exists (see ensureSession): new says whether it created the
// session.
type created struct {
	lease session.Lease
	agent string
	new   bool
	sess  *session.Session // as stored, when it existed
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
		return nil, &Error{Kind: FailInput, Code: CodeNoSession, Msg: "no session id"}
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
	case errors.As(err, &re) && (re.Code == CodeSessionExists || errors.Is(err, session.ErrLeaseHeld)):
		return nil, nil
	case err != nil:
		return nil, err
	case lease == nil:
		return nil, nil
	}
	return &created{lease: *lease, agent: agent, new: made, sess: sess}, nil
}

// rulesPrefix starts the id of an agent's hidden rule log (see Always).
const rulesPrefix = "_rules."

// hidden reports whether id is a hidden session's: an agent's rule log,
// or a claim (session.Hidden). No turn runs in one, ListSessions leaves
// them out.
func hidden(id string) bool { return session.Hidden(id) }

// ListSessions lists sessions as the store does (of ctx's tenant, or of
// every tenant with opts.AllTenants), leaving out the agents' hidden rule
// logs (whose ids start with "_rules.") and claims ("_claim.", see
// Claim) in the store's query (ListOptions.SkipHidden), so that a page
// holds opts.Limit sessions as long as there are. last is the page's last
// session when the page is full, nil when it was the last one: the next
// page starts after it (ListOptions.After = last.ID, AfterTenant =
// last.Tenant, AfterCreated = last.CreatedAt, so that it does even if
// last is deleted meanwhile).
func (r *Runner) ListSessions(ctx context.Context, opts session.ListOptions) (page []*session.Session, last *session.Session, err error) {
	opts.SkipHidden = true
	page, err = r.store.ListSessions(ctx, opts)
	if err != nil {
		return nil, nil, &Error{Kind: FailStore, Msg: "list sessions", Err: err}
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 50 // the stores' default (session.ListOptions)
	}
	if len(page) == limit {
		last = page[len(page)-1]
	}
	return page, last, nil
}

// DeleteSession deletes a session — its events, snapshot and row — and
// forgets the state this runner keeps of it. It refuses (code busy, or
// lease_held naming the process) a session with a run in progress, here
// or in another process, and an agent's rule log (code protected:
// deleting it would drop every standing decision of the agent), unless
// force is set: the run in another process then fails at its next commit.
func (r *Runner) DeleteSession(ctx context.Context, id string, force bool) error {
	k := keyOf(ctx, id)
	if err := r.reg.claim(k, nil); err != nil {
		// A run that has stopped and is letting go of the session (its
		// caller may have its answer already) is waited for, not refused.
		ch := r.reg.ending(k)
		if ch == nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return err
		}
		if err := r.reg.claim(k, nil); err != nil {
			return err
		}
	}
	defer r.release(k)
	var lease *leaseKeeper
	if !force {
		if strings.HasPrefix(id, rulesPrefix) {
			return &Error{Kind: FailInput, Code: CodeProtected, Msg: fmt.Sprintf(
				"session %s holds the standing decisions of agent %s: deleting it drops them all (revoke them one by one with agentrt rules revoke, or force the deletion)",
				id, strings.TrimPrefix(id, rulesPrefix))}
		}
		// Not from under a run of another process: the session's lease,
		// taken as a run would (a dead owner's is taken over), is held
		// while the session goes.
		var err error
		if lease, err = r.acquireLease(ctx, id, false, nil); err != nil {
			return err
		}
	}
	r.cache.take(k)
	if err := r.store.DeleteSession(ctx, id); err != nil {
		lease.stop() // the session stays: released, free again
		return notFound(id, err)
	}
	_ = lease.halt() // gone with the session
	return nil
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
	if err := st.AttachPolicy(r.policyOf(sess.Agent)); err != nil {
		return nil, &Error{Kind: FailPolicy, Msg: "session " + id, Err: err}
	}
	if st.Seq < sess.LastSeq {
		if err := r.replay(ctx, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// policyOf returns the policy of the named agent (React for an agent
// this runner does not know).
func (r *Runner) policyOf(agent string) Policy {
	if a, ok := r.agents[agent]; ok && a.Policy != nil {
		return a.Policy
	}
	return React{}
}

// newState returns the State of a new session of agent, with its
// policy's state.
func (r *Runner) newState(id, agent string) (*State, error) {
	st := NewState(id, agent)
	if err := st.AttachPolicy(r.policyOf(agent)); err != nil {
		return nil, &Error{Kind: FailPolicy, Msg: "session " + id, Err: err}
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

// loadCached is Load, from the cached State of the session when it is
// current (or can be brought up to date with the events after it). sess
// is the session's row as the store has it, when the caller has it (nil:
// it is read).
func (r *Runner) loadCached(ctx context.Context, k skey, sess *session.Session) (*State, error) {
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

func notFound(id string, err error) error {
	if errors.Is(err, session.ErrNotFound) {
		return &Error{Kind: FailInput, Code: CodeNotFound, Msg: fmt.Sprintf("session %q not found", id), Err: err}
	}
	return &Error{Kind: FailStore, Msg: "get session " + id, Err: err}
}

// release ends a claim of session k (see registry.release).
func (r *Runner) release(k skey) {
	r.reg.release(k)
}

// ImportSession creates session id (a fresh id when empty) for agent (""
// for the default agent) starting from an existing conversation: history
// comes first in the session's history, recorded in its log as one
// messages_imported event (source says where it came from), and the next
// turn goes on from it. The conversation must hold at least one message,
// each of a known role (a system message only first); a tool message
// answers a call of the assistant message before it, by id, and every
// call is answered before the next assistant or user message.
func (r *Runner) ImportSession(ctx context.Context, agent, id string, history []model.Message, source string, metadata map[string]string) (*session.Session, error) {
	if err := checkHistory(history); err != nil {
		return nil, &Error{Kind: FailInput, Code: CodeBadHistory, Msg: "the conversation to import: " + err.Error()}
	}
	if agent == "" {
		var err error
		if agent, err = r.DefaultAgent(); err != nil {
			return nil, err
		}
	}
	a, err := r.agent(agent)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = r.newID()
	}
	exists := &Error{Kind: FailInput, Code: CodeSessionExists, Msg: fmt.Sprintf("session %q already exists", id)}
	// Claimed before it is created: a session of that id this runner is
	// using is left alone (taking its lease would give this runner its own
	// lease again, and letting go of that would release it under its run).
	k := keyOf(ctx, id)
	if err := r.reg.claim(k, nil); err != nil {
		if AsError(err).Code == CodeBusy {
			return nil, exists
		}
		return nil, err
	}
	defer r.release(k)
	s, lease, made, err := r.createSession(ctx, agent, id, metadata, true)
	if errors.Is(err, session.ErrLeaseHeld) {
		return nil, exists // and another process runs it
	}
	if err != nil {
		return nil, err
	}
	if !made {
		if lease != nil {
			r.keepLease(ctx, *lease, nil).stop()
		}
		return nil, exists
	}
	var keeper *leaseKeeper
	if lease != nil {
		keeper = r.keepLease(ctx, *lease, nil)
	} else if keeper, err = r.acquireLease(ctx, s.ID, false, nil); err != nil {
		return nil, err
	}
	st, err := r.newState(s.ID, agent)
	if err != nil {
		keeper.stop()
		return nil, err
	}
	x := r.newExec(a, st)
	x.lease, x.key, x.fence = keeper, k, keeper.token()
	emit(x, session.MessagesImported{Messages: slices.Clone(history), Source: source})
	err = x.Commit(ctx)
	keeper.stop()
	r.putExec(x)
	if err != nil {
		_ = r.store.DeleteSession(context.WithoutCancel(ctx), s.ID)
		return nil, err
	}
	return r.store.GetSession(ctx, s.ID)
}

// checkHistory reports what makes a conversation unfit to import.
func checkHistory(msgs []model.Message) error {
	if len(msgs) == 0 {
		return errors.New("it holds no message")
	}
	open := map[string]bool{} // calls of the last assistant message without a result yet
	for i, m := range msgs {
		n := i + 1
		switch m.Role {
		case model.RoleSystem:
			if i > 0 {
				return fmt.Errorf("message %d: a system message comes only first", n)
			}
		case model.RoleUser, model.RoleAssistant:
			if len(open) > 0 {
				return fmt.Errorf("message %d (%s): the tool calls of the assistant before it have no result: %s", n, m.Role, strings.Join(slices.Sorted(maps.Keys(open)), ", "))
			}
			if m.Role == model.RoleUser && len(m.ToolCalls) > 0 {
				return fmt.Errorf("message %d: a user message makes no tool calls", n)
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return fmt.Errorf("message %d: a tool call needs an id and a name", n)
				}
				if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
					return fmt.Errorf("message %d: the arguments of call %s are not JSON", n, c.ID)
				}
				open[c.ID] = true
			}
		case model.RoleTool:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: a tool result for call %q, which the assistant message before it did not make (or answered already)", n, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Errorf("message %d: unknown role %q (system, user, assistant or tool)", n, m.Role)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("the tool calls of the last assistant message have no result: %s", strings.Join(slices.Sorted(maps.Keys(open)), ", "))
	}
	return nil
}
