package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/group"
)

// maxBatch is the most writes one transaction of the group commit holds.
const maxBatch = 512

// writer is the store's group commit (see package group). SQLite has one
// writer, and a transaction costs far more than a statement in it (the WAL
// append, and under synchronous=FULL an fsync), so the writes of this
// process that arrive while a transaction is being written wait for it
// and then go together in the next, and each is answered once the
// transaction holding it has committed. A write alone pays nothing for
// the group.
//
// A write refused (a stale seq, a fenced token, a missing session) says
// so with refuse, and a write may refuse only before it has changed
// anything: a refusal is its outcome, and the writes beside it are kept.
// Any other error may leave part of the write in the transaction, so the
// batch is given up and each of its writes runs again in a transaction of
// its own. (SAVEPOINTs around each write would spare that rare retry, but
// they cost more than the write's own statements: every page a write
// touches is first copied into the savepoint's journal.)
type writer struct {
	db *sql.DB
	g  *group.Group[writeFn]

	ck *checkpointer // told of the writes; nil for none

	// The writer's own, used by the leader only: its transaction on the
	// driver's connection, heads, and the database's data_version when
	// heads was last right.
	t       wtx
	heads   heads
	version int64

	// foreign, when set, is called (by the leader, or by look) when the
	// data_version says another connection committed: another process,
	// whose commits the store's followers must read. began counts the
	// transactions begun, so that look can tell the writer has looked
	// lately.
	foreign func()
	began   atomic.Int64
}

// heads knows, of the sessions whose commits this writer wrote last,
// what a commit that leaves the session's row alone must check (see
// Store.Commit): the session's log, last seq, status and turn, and the
// fence token of its lease. It is right as long as nothing else wrote to
// the database: the writer forgets it all when the database's
// data_version says another connection (another process) committed, and
// when a transaction of its own is rolled back. A session's entry goes
// when a write changes the session's row.
type heads map[headKey]head

type headKey struct{ tenant, id string }

type head struct {
	log, seq int64
	status   string
	turn     int
	fence    int64
}

// maxHeads bounds heads: a full cache is emptied (the sessions of runs
// going on come back at their next commit).
const maxHeads = 1 << 14

// writeFn is a write: it runs in a transaction, and its changes are kept
// if it returns nil. It returns a refusal (see refuse) only if it has
// changed nothing.
type writeFn = func(ctx context.Context, tx *wtx) error

type writeOp = group.Op[writeFn]

// refusal is a write's error that says the write changed nothing.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// refuse marks err as a write's refusal: returned by a writeFn that has
// changed nothing in the transaction.
func refuse(err error) error { return &refusal{err} }

// refuseKnown is refuse for the errors that say why a write is refused
// (the store's sentinels); any other error (a database error while the
// write read what it checks) is returned as it is, and gives the batch up:
// SQLite may have rolled the transaction back.
func refuseKnown(err error) error {
	for _, known := range []error{session.ErrNotFound, session.ErrConflict, session.ErrFenced, session.ErrLeaseHeld, session.ErrExists} {
		if errors.Is(err, known) {
			return refuse(err)
		}
	}
	return err
}

// outcome is what a write's caller is told of err: a refusal's own error.
func outcome(err error) error {
	if r, ok := asRefusal(err); ok {
		return r.err
	}
	return err
}

// asRefusal finds a refusal in err's chain. (Not errors.As on every
// write: its target escapes, an allocation a commit, for the nil error of
// nearly every one.)
func asRefusal(err error) (*refusal, bool) {
	if err == nil {
		return nil, false
	}
	var r *refusal
	ok := errors.As(err, &r)
	return r, ok
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	w := &writer{db: db, heads: make(heads), version: -1}
	// The statements, prepared now to report a bad one at once.
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error { return w.t.prepare(dc.(driver.Conn)) }); err != nil {
		return nil, err
	}
	w.g = group.New(maxBatch, 1, w.flush)
	return w, nil
}

// close closes the writer's statements.
func (w *writer) close() error {
	conn, err := w.db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		if dc != w.t.conn {
			return nil // its connection is gone, and they with it
		}
		return w.t.close()
	})
}

// forget empties heads.
func (w *writer) forget() {
	if len(w.heads) > 0 {
		clear(w.heads)
	}
}

// remember records h as session k's head.
func (w *writer) remember(k headKey, h head) {
	if len(w.heads) >= maxHeads {
		w.forget()
	}
	w.heads[k] = h
}

// write runs fn in a write transaction, with the writes of other callers
// that wait at the same time, and returns once that transaction has
// committed (fn's error, or the transaction's).
//
// ctx bounds the wait: for the writes ahead of this one, and for another
// process's write lock (SQLite's busy handler, retried every busyStep up
// to busyTimeout). Once fn has begun it runs to completion under a context
// without cancellation: a commit is never torn by a cancel, and the driver
// starts no watcher goroutines.
func (w *writer) write(ctx context.Context, fn writeFn) error {
	return w.g.Do(ctx, fn)
}

// flush writes ops in one transaction and answers each of them.
func (w *writer) flush(ops []*writeOp) {
	if w.ck != nil {
		defer w.ck.wrote(len(ops))
	}
	conn, err := w.db.Conn(context.Background())
	if err != nil {
		answer(ops, err)
		return
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		defer func() {
			// A write that panicked left its transaction open: the
			// connection goes back to the pool without it.
			if w.t.inTx {
				w.rollback(&w.t)
			}
		}()
		if dc != w.t.conn {
			// A new connection (database/sql replaced a broken one):
			// its data_version is its own.
			if err := w.t.prepare(dc.(driver.Conn)); err != nil {
				return err
			}
			w.forget()
			w.version = -1
		}
		w.flushOn(&w.t, ops)
		return nil
	})
	if err != nil {
		answer(ops, err) // nothing ran
	}
}

// flushOn is flush on t.
func (w *writer) flushOn(t *wtx, ops []*writeOp) {
	ops, err := w.begin(t, ops)
	if err != nil || len(ops) == 0 {
		answer(ops, err)
		return
	}
	if len(ops) == 1 {
		w.alone(t, ops[0])
		return
	}
	// The writes' own outcomes, given once the transaction has committed.
	errs := make([]error, len(ops))
	for i, op := range ops {
		err := op.W(context.WithoutCancel(op.Ctx), t)
		if _, refused := asRefusal(err); err != nil && !refused {
			w.retryAlone(t, ops)
			return
		}
		errs[i] = err
	}
	err = w.commit(t)
	for i, op := range ops {
		op.Answer(cmp.Or(outcome(errs[i]), err))
	}
}

// commit commits t's transaction. If it cannot, the transaction is
// rolled back (SQLite may have done so already) and heads forgotten.
func (w *writer) commit(t *wtx) error {
	_, err := t.exec(sCommit)
	if err != nil {
		t.exec(sRollback) // an error if SQLite has rolled it back: no transaction
		w.forget()
	}
	return err
}

// rollback rolls t's transaction back and forgets heads.
func (w *writer) rollback(t *wtx) {
	t.exec(sRollback)
	w.forget()
}

// retryAlone gives up a batch that failed as a whole: its transaction is
// rolled back, and each write of ops runs again in a transaction of its
// own, so that every write's outcome is its own. A write refused in the
// batch runs again too: a refusal can depend on the writes before it.
func (w *writer) retryAlone(t *wtx, ops []*writeOp) {
	w.rollback(t)
	for _, op := range ops {
		live, err := w.begin(t, []*writeOp{op})
		switch {
		case err != nil || len(live) == 0:
			answer(live, err)
		default:
			w.alone(t, op)
		}
	}
}

// alone writes op in t's transaction, begun for it alone, and answers it.
func (w *writer) alone(t *wtx, op *writeOp) {
	err := op.W(context.WithoutCancel(op.Ctx), t)
	if err != nil {
		w.rollback(t)
	} else {
		err = w.commit(t)
	}
	op.Answer(outcome(err))
}

// begin begins a write transaction on t (BEGIN IMMEDIATE: the write
// lock), retrying while another process holds the lock, for up to
// busyTimeout. Writes whose contexts end while it waits are answered with
// their context's error and left out; it returns the others. With the
// lock held, it forgets heads if another connection has committed since
// it was last right.
func (w *writer) begin(t *wtx, ops []*writeOp) ([]*writeOp, error) {
	for start := time.Now(); ; {
		_, err := t.exec(sBegin)
		if err == nil {
			var v int64
			if err := t.queryRow(sDataVersion, nil, &v); err != nil {
				v = -1 // unknown: never matches
			}
			w.began.Add(1)
			w.versionIs(v)
			return ops, nil
		}
		if !isBusy(err) || time.Since(start) >= busyTimeout {
			return ops, err
		}
		live := ops[:0]
		for _, op := range ops {
			if err := op.Ctx.Err(); err != nil {
				op.Answer(fmt.Errorf("waiting for the write lock: %w", err))
				continue
			}
			live = append(live, op)
		}
		if ops = live; len(ops) == 0 {
			return nil, nil
		}
		// SQLite has normally waited busyStep already; the pause only
		// keeps a busy error that comes back at once from spinning.
		time.Sleep(time.Millisecond)
	}
}

// versionIs takes v, the database's data_version on the writer's
// connection (-1: unknown): when it changed, another connection has
// committed since it was last read, so heads are forgotten and the
// store told (foreign).
func (w *writer) versionIs(v int64) {
	if v == w.version && v != -1 {
		return
	}
	w.forget()
	w.version = v
	if w.foreign != nil {
		w.foreign()
	}
}

// look reads the data_version on the writer's connection outside a
// transaction (waiting for a flush in progress: the writer has one
// connection), so that another process's commits are found while this
// process writes nothing. Cheap: no lock is taken.
func (w *writer) look(ctx context.Context) error {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		if dc != w.t.conn {
			if err := w.t.prepare(dc.(driver.Conn)); err != nil {
				return err
			}
			w.forget()
			w.version = -1
		}
		var v int64
		if err := w.t.queryRow(sDataVersion, nil, &v); err != nil {
			v = -1
		}
		w.versionIs(v)
		return nil
	})
}

// answer gives every op err as its outcome.
func answer(ops []*writeOp, err error) {
	for _, op := range ops {
		op.Answer(err)
	}
}

// checkpointEvery is how many writes go into the WAL between the
// checkpoints the checkpointer runs.
const checkpointEvery = 500

// checkpointer copies the WAL's pages into the database file (a PASSIVE
// checkpoint, which never waits for readers or writers) on a connection of
// its own, when the group commit has written checkpointEvery writes since
// the last: on another core, rather than in a writer's commit, as SQLite's
// automatic checkpoint does. The writer's automatic checkpoint stays on as
// a backstop, at a larger WAL (autoCheckpointPages).
type checkpointer struct {
	db      *sql.DB
	kick    chan struct{} // cap 1: a checkpoint is due
	stop    chan struct{}
	stopped chan struct{}
	writes  int // since the last kick; guarded by the group's lead
}

// autoCheckpointPages is the WAL size, in pages, at which the writer
// checkpoints itself.
const autoCheckpointPages = 10000

func newCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

func (c *checkpointer) run() {
	defer close(c.stopped)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
			// An error leaves the pages in the WAL, for the next
			// checkpoint or the writer's own.
			_, _ = c.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

// wrote counts n writes, and asks for a checkpoint every checkpointEvery.
// Only the group's leader calls it.
func (c *checkpointer) wrote(n int) {
	if c.writes += n; c.writes < checkpointEvery {
		return
	}
	c.writes = 0
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the checkpointer and waits for it.
func (c *checkpointer) close() {
	close(c.stop)
	<-c.stopped
}
