package a2a

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// taskStore is a2a-go's task store (taskstore.Store) of one agent's
// endpoint, over the session store: a task is derived from what the store
// holds — the gateway input its id names and the events of the turn that
// answers it (deriveTasks) — so that every process on the store finds it,
// after a restart too. What the store holds no copy of lives here, in
// this process's memory:
//
//   - the tasks this process is running (a2a-go's task manager, or the
//     handler's own stream of a new task (progress), updating them as the
//     turn streams, with the chunks of the answer the log does not keep),
//     until they end;
//   - the last tasks that ended or wait for a person here, as a2a-go last
//     stored them, so that the answer to a request is the task as it was
//     sent (a waiting task is checked against the log first: a request
//     answered elsewhere moves it on).
//
// Nothing is copied on the way in or out: a2a-go's task manager copies a
// task before it changes it, and a task handed out is a fresh Task value
// whose slices are clipped, so that appending to them (as a2a-go does to
// the history) never writes into the one held here.
//
// Versions: a task derived from the log has version (S+1)<<20, S the
// seq of the last event of its turn (or the seq its turn comes after);
// each update made here adds one. So a version tells the state it was
// read in from any later one, in this process or across processes, and
// an update based on a task that has moved on since — a request answered
// or a run canceled elsewhere — is refused with
// taskstore.ErrConcurrentModification, as a2a-go's task manager expects.
//
// All methods may be called concurrently.
type taskStore struct {
	srv   *server.Server
	agent string
	inbox session.Inbox

	// updates counts a2a-go's task manager's updates (Update): the
	// handler's own streams of new tasks make none.
	updates atomic.Int64

	mu    sync.Mutex
	tasks map[spec.TaskID]*entry // guarded by mu
	ended []*entry               // guarded by mu: the entries that ended, oldest first, at most maxEnded
}

// maxEnded bounds how many ended tasks the store keeps as a2a-go stored
// them; the others are derived from the log when asked for.
const maxEnded = 1024

// versionShift places a task's log position above the updates made to it
// in one process (see taskStore).
const versionShift = 20

// entry is a task held in memory.
type entry struct {
	tenant  string
	task    *spec.Task
	version taskstore.TaskVersion
	// turn is a new task's turn, followed from before its input was
	// stored, until the task's execution takes it (start).
	turn *server.Turn
	// executing: a2a-go's execution of the new task has begun (start).
	executing bool
	// ended: the task ended or waits for a person (a2a-go's execution of
	// it is over); the entry is kept in taskStore.ended.
	ended bool
}

var _ taskstore.Store = (*taskStore)(nil)

func newTaskStore(srv *server.Server, agent string) (*taskStore, error) {
	ib, ok := srv.Runner().Store().(session.Inbox)
	if !ok {
		return nil, fmt.Errorf("a2a: the store %T keeps no inbox: tasks are derived from the inputs it stores", srv.Runner().Store())
	}
	return &taskStore{srv: srv, agent: agent, inbox: ib, tasks: map[spec.TaskID]*entry{}}, nil
}

// Create refuses: a task is made by the adapter when it stores the
// task's input (add), under an id that names that input.
func (s *taskStore) Create(ctx context.Context, task *spec.Task) (taskstore.TaskVersion, error) {
	return taskstore.TaskVersionMissing, rpcError(spec.ErrInvalidRequest, "task %s: tasks are created by the adapter as it stores their input", task.ID)
}

// add holds new task t, of ctx's tenant, with the turn that answers its
// input (see handler.newTask).
func (s *taskStore) add(ctx context.Context, t *spec.Task, version taskstore.TaskVersion, turn *server.Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[t.ID] = &entry{tenant: session.TenantOf(ctx), task: t, version: version, turn: turn}
}

// start hands new task id's turn to its execution, which has begun;
// nil when there is none (the request that made the task ended first,
// see release).
func (s *taskStore) start(id spec.TaskID) *server.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	if e == nil {
		return nil
	}
	t := e.turn
	e.turn, e.executing = nil, true
	return t
}

// begin hands new task id's turn to the handler's own stream of the
// task (handler.stream), as start does to a2a-go's execution, with a
// copy of the task as held, which the stream then updates (progress).
func (s *taskStore) begin(id spec.TaskID) (*spec.Task, *server.Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	if e == nil || e.turn == nil {
		return nil, nil
	}
	t := e.turn
	e.turn, e.executing = nil, true
	return shallow(e.task), t
}

// progress holds task t, which event ev changed, as task id's, as
// a2a-go's task manager would have stored it. t stays the caller's: what
// is held is a copy, whose artifacts and metadata the caller's next
// changes (apply) do not reach. A task the store no longer holds as
// running (a CancelTask ended it) is left as it is.
func (s *taskStore) progress(id spec.TaskID, t *spec.Task, ev spec.Event) {
	c := shallow(t)
	c.Artifacts = slices.Clone(c.Artifacts)
	c.Metadata = maps.Clone(c.Metadata)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.tasks[id]; e != nil && !e.ended {
		s.set(e, &taskstore.UpdateRequest{Task: c, Event: ev}, e.version+1)
	}
}

// release ends new task id's turn if its execution has not begun: the
// request that made the task is over (it failed, or its client left), and
// an execution that begins after this finds no turn and follows the log.
// The task is then forgotten here: the log holds it. Only the entry that
// still holds the turn is: once the turn was taken, the entry at id may
// be another's (the answer to the task's question, which a2a-go runs,
// may already have begun when the request that made the task returns).
func (s *taskStore) release(id spec.TaskID) {
	s.mu.Lock()
	e := s.tasks[id]
	var t *server.Turn
	if e != nil && e.turn != nil && !e.executing && !e.ended {
		t = e.turn
		delete(s.tasks, id)
	}
	s.mu.Unlock()
	if t != nil {
		t.Close()
	}
}

// settle forgets task id if it is held as running though its execution
// is over (it ended without a last update: a2a-go gave up on it): the
// log says how it stands.
func (s *taskStore) settle(id spec.TaskID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.tasks[id]; e != nil && !e.ended {
		delete(s.tasks, id)
	}
}

// running reports whether task id is held as running in this process
// for ctx's tenant.
func (s *taskStore) running(ctx context.Context, id spec.TaskID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	return e != nil && !e.ended && e.tenant == session.TenantOf(ctx)
}

// Get implements taskstore.Store: the task held here if it is current,
// else the task derived from the log.
func (s *taskStore) Get(ctx context.Context, id spec.TaskID) (*taskstore.StoredTask, error) {
	ref, ok := parseTaskID(id)
	if !ok {
		return nil, spec.ErrTaskNotFound
	}
	tenant := session.TenantOf(ctx)
	if t, v, ok := s.held(ctx, id, tenant); ok {
		return &taskstore.StoredTask{Task: t, Version: v, User: tenant}, nil
	}
	d, err := s.derive(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: d.task, Version: d.version, User: tenant}, nil
}

// held returns a copy of task id as held here for tenant, if it is: a
// task that waits is checked against the log first, and forgotten if its
// run has moved on.
func (s *taskStore) held(ctx context.Context, id spec.TaskID, tenant string) (*spec.Task, taskstore.TaskVersion, bool) {
	s.mu.Lock()
	e := s.tasks[id]
	if e == nil || e.tenant != tenant {
		s.mu.Unlock()
		return nil, 0, false
	}
	t, v, waiting, ended := shallow(e.task), e.version, e.waiting(), e.ended
	s.mu.Unlock()
	if waiting && s.movedOn(ctx, t) || ended && !waiting && s.deleted(ctx, t) {
		s.forget(id, e)
		return nil, 0, false
	}
	return t, v, true
}

// deleted reports whether the session of ended task t is gone (DELETE
// /v1/sessions/{id}): the task went with it.
func (s *taskStore) deleted(ctx context.Context, t *spec.Task) bool {
	_, err := s.srv.Runner().Store().GetSession(ctx, t.ContextID)
	return err != nil
}

// forget drops entry e of task id, if it is still the one held.
func (s *taskStore) forget(id spec.TaskID, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks[id] == e {
		delete(s.tasks, id)
	}
}

// waiting reports whether e is a task that waits for a person: its run
// may go on without this process (answered elsewhere, canceled).
func (e *entry) waiting() bool { return e.ended && e.task.Status.State == spec.TaskStateInputRequired }

// movedOn reports whether the run of waiting task t has events after the
// position its question names (an answer, a cancel), or its session is
// gone: the task held is no longer the task.
func (s *taskStore) movedOn(ctx context.Context, t *spec.Task) bool {
	runID, seq := position(t)
	if runID == "" {
		return true
	}
	for ev, err := range s.srv.Runner().Store().Events(ctx, t.ContextID, seq) {
		if err != nil || ev.RunID == runID {
			return true
		}
	}
	return false
}

// Update implements taskstore.Store. A task held as running here is
// updated at once; any other (one that waits, or one this process does
// not run) is first read as it stands, and the update refused with
// ErrConcurrentModification if req.PrevVersion is not its version.
func (s *taskStore) Update(ctx context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	s.updates.Add(1)
	id := req.Task.ID
	ref, ok := parseTaskID(id)
	if !ok {
		return taskstore.TaskVersionMissing, spec.ErrTaskNotFound
	}
	tenant := session.TenantOf(ctx)
	s.mu.Lock()
	e := s.tasks[id]
	if e != nil && e.tenant == tenant && !e.waiting() {
		defer s.mu.Unlock()
		if req.PrevVersion != taskstore.TaskVersionMissing && req.PrevVersion != e.version {
			return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
		}
		s.set(e, req, e.version+1)
		return e.version, nil
	}
	s.mu.Unlock()

	var cur taskstore.TaskVersion
	if _, v, ok := s.held(ctx, id, tenant); ok {
		cur = v
	} else {
		e = nil
		d, err := s.derive(ctx, ref)
		if err != nil {
			return taskstore.TaskVersionMissing, err
		}
		cur = d.version
	}
	if req.PrevVersion != taskstore.TaskVersionMissing && req.PrevVersion != cur {
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.tasks[id]; now != e && now != nil {
		// Another update got in while this one read the task.
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	n := &entry{tenant: tenant}
	s.tasks[id] = n
	s.set(n, req, cur+1)
	return n.version, nil
}

// set stores the task of update req as e's, at version v; a task that
// ended (or waits) joins the ended entries, the oldest of which are
// forgotten. An update whose event is a message begins an execution of
// the task (a2a-go adds the message to the history first): the task is
// then running, whatever its state. Callers hold s.mu.
func (s *taskStore) set(e *entry, req *taskstore.UpdateRequest, v taskstore.TaskVersion) {
	t := req.Task
	e.task, e.version = t, v
	if _, begins := req.Event.(*spec.Message); begins || !final(t.Status.State) {
		e.ended = false
		return
	}
	if e.ended {
		return
	}
	e.ended = true
	if len(s.ended) == maxEnded {
		old := s.ended[0]
		s.ended = slices.Delete(s.ended, 0, 1)
		if old.ended && s.tasks[old.task.ID] == old {
			delete(s.tasks, old.task.ID)
		}
	}
	s.ended = append(s.ended, e)
}

// final reports whether a2a-go's execution of a task ends in state st.
func final(st spec.TaskState) bool {
	return st.Terminal() || st == spec.TaskStateInputRequired
}

// shallow is a copy of t that shares t's messages and artifacts but not
// its slices: appending to the copy's history leaves t as it is.
func shallow(t *spec.Task) *spec.Task {
	c := *t
	c.History = slices.Clip(t.History)
	c.Artifacts = slices.Clip(t.Artifacts)
	return &c
}

// derive is task ref as the store holds it.
func (s *taskStore) derive(ctx context.Context, ref taskRef) (*derivedTask, error) {
	sess, err := s.sessionOf(ctx, ref.session)
	if err != nil {
		return nil, err
	}
	ins, err := s.inbox.Inputs(ctx, ref.session, ref.inboxSeq-1, 1)
	if err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (the input of task " + string(ref.id()) + ")", Err: err}
	}
	if len(ins) == 0 || ins[0].ID != ref.input || ins[0].SessionID != ref.session {
		return nil, spec.ErrTaskNotFound
	}
	if after, ok := taskAfter(&ins[0]); !ok || after != ref.after {
		return nil, spec.ErrTaskNotFound
	}
	ds, err := deriveTasks(ctx, s.srv.Runner().Store(), sess, []taskInput{{ref: ref, in: &ins[0]}})
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

// sessionOf is session id of ctx's tenant, if it is this agent's; else
// the task asked for is not found.
func (s *taskStore) sessionOf(ctx context.Context, id string) (*session.Session, error) {
	sess, err := s.srv.Runner().Store().GetSession(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, spec.ErrTaskNotFound
	}
	if err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (session " + id + ")", Err: err}
	}
	if sess.Agent != s.agent {
		return nil, spec.ErrTaskNotFound
	}
	return sess, nil
}
