package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"
)

// maxBatch is the most writes one transaction of the group commit holds.
const maxBatch = 512

// group is the store's group commit. SQLite has one writer, and a
// transaction costs far more than a statement in it (the WAL append, and
// under synchronous=FULL an fsync), so the writes of this process that
// arrive while a transaction is being written wait for it and then go
// together in the next: each in a SAVEPOINT, so that one refused (a stale
// seq, a fenced token, a missing session) is rolled back alone, and each
// answered once the transaction holding it has committed. A write that
// finds nobody writing goes at once, alone; a write alone pays nothing for
// the group.
//
// There is no writer goroutine: the first waiting caller to take the lead
// writes the queue (up to maxBatch), then hands the lead on; a caller
// whose write another caller took waits for that caller's answer.
type group struct {
	db *sql.DB

	lead  chan struct{} // a token: its holder writes the next batch
	batch []*writeOp    // the leader's batch; guarded by lead

	mu    sync.Mutex
	queue []*writeOp // waiting writes, oldest first; guarded by mu

	save, release, rollbackTo *sql.Stmt // prepared on db

	ck *checkpointer // told of the writes; nil for none
}

// writeOp is one write waiting in the group.
type writeOp struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	err  error
	done chan struct{} // closed once err is the write's outcome
}

func newGroup(ctx context.Context, db *sql.DB) (*group, error) {
	g := &group{db: db, lead: make(chan struct{}, 1)}
	for _, s := range []struct {
		dst   **sql.Stmt
		query string
	}{{&g.save, "SAVEPOINT w"}, {&g.release, "RELEASE w"}, {&g.rollbackTo, "ROLLBACK TO w"}} {
		var err error
		if *s.dst, err = db.PrepareContext(ctx, s.query); err != nil {
			g.close()
			return nil, fmt.Errorf("preparing %q: %w", s.query, err)
		}
	}
	return g, nil
}

func (g *group) close() error {
	var err error
	for _, s := range []*sql.Stmt{g.save, g.release, g.rollbackTo} {
		if s != nil {
			if e := s.Close(); e != nil && err == nil {
				err = e
			}
		}
	}
	return err
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
func (g *group) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting for the write lock: %w", err)
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, op)
	g.mu.Unlock()
	canceled := ctx.Done()
	for {
		select {
		case <-op.done:
			return op.err
		case g.lead <- struct{}{}:
			g.mu.Lock()
			n := min(len(g.queue), maxBatch)
			g.batch = append(g.batch[:0], g.queue[:n]...)
			rest := copy(g.queue, g.queue[n:])
			clear(g.queue[rest:])
			g.queue = g.queue[:rest]
			g.mu.Unlock()
			if len(g.batch) > 0 {
				g.flush(g.batch)
				if g.ck != nil {
					g.ck.wrote(len(g.batch))
				}
				clear(g.batch)
			}
			<-g.lead
		case <-canceled:
			// Out of the queue if nobody has taken it; otherwise its
			// batch is being written, and its outcome comes soon.
			canceled = nil
			g.mu.Lock()
			i := slices.Index(g.queue, op)
			if i >= 0 {
				g.queue = slices.Delete(g.queue, i, i+1)
			}
			g.mu.Unlock()
			if i >= 0 {
				return fmt.Errorf("waiting for the write lock: %w", ctx.Err())
			}
		}
	}
}

// flush writes ops in one transaction and answers each of them.
func (g *group) flush(ops []*writeOp) {
	bg := context.Background()
	conn, err := g.db.Conn(bg)
	if err != nil {
		answer(ops, err)
		return
	}
	defer conn.Close()
	tx, ops, err := begin(conn, ops)
	if err != nil || len(ops) == 0 {
		answer(ops, err)
		return
	}
	if len(ops) == 1 {
		alone(tx, ops[0])
		return
	}
	save, release, rollbackTo := tx.Stmt(g.save), tx.Stmt(g.release), tx.Stmt(g.rollbackTo)
	for i, op := range ops {
		if _, err := save.Exec(); err != nil {
			g.retryAlone(conn, tx, ops[:i], ops[i:])
			return
		}
		op.err = op.fn(context.WithoutCancel(op.ctx), tx)
		if op.err != nil {
			if _, err := rollbackTo.Exec(); err != nil {
				// SQLite rolled the whole transaction back (on a full
				// disk, say): the others go alone.
				g.retryAlone(conn, tx, ops[:i], ops[i+1:])
				close(op.done)
				return
			}
		}
		if _, err := release.Exec(); err != nil {
			g.retryAlone(conn, tx, ops[:i], ops[i+1:])
			close(op.done)
			return
		}
	}
	err = tx.Commit()
	for _, op := range ops {
		if op.err == nil {
			op.err = err
		}
		close(op.done)
	}
}

// retryAlone gives up a batch that failed as a whole: the transaction is
// rolled back, and each write of it (those done, which were rolled back
// with it, and those not yet run) runs again in a transaction of its own,
// so that every write's outcome is its own. A write that was refused in
// done keeps its refusal.
func (g *group) retryAlone(conn *sql.Conn, tx *sql.Tx, done, rest []*writeOp) {
	tx.Rollback()
	for _, op := range slices.Concat(done, rest) {
		if op.err != nil { // refused in the batch (rest has not run)
			close(op.done)
			continue
		}
		tx, live, err := begin(conn, []*writeOp{op})
		switch {
		case err != nil || len(live) == 0:
			answer(live, err)
		default:
			alone(tx, op)
		}
	}
}

// alone writes op in tx, a transaction of its own, and answers it.
func alone(tx *sql.Tx, op *writeOp) {
	op.err = op.fn(context.WithoutCancel(op.ctx), tx)
	if op.err != nil {
		tx.Rollback()
	} else {
		op.err = tx.Commit()
	}
	close(op.done)
}

// begin begins a write transaction on conn (BEGIN IMMEDIATE: the write
// lock), retrying while another process holds the lock, for up to
// busyTimeout. Writes whose contexts end while it waits are answered with
// their context's error and left out; it returns the others.
func begin(conn *sql.Conn, ops []*writeOp) (*sql.Tx, []*writeOp, error) {
	for start := time.Now(); ; {
		tx, err := conn.BeginTx(context.Background(), nil)
		if err == nil {
			return tx, ops, nil
		}
		if !isBusy(err) || time.Since(start) >= busyTimeout {
			return nil, ops, err
		}
		live := ops[:0]
		for _, op := range ops {
			if err := op.ctx.Err(); err != nil {
				op.err = fmt.Errorf("waiting for the write lock: %w", err)
				close(op.done)
				continue
			}
			live = append(live, op)
		}
		if ops = live; len(ops) == 0 {
			return nil, nil, nil
		}
		// SQLite has normally waited busyStep already; the pause only
		// keeps a busy error that comes back at once from spinning.
		time.Sleep(time.Millisecond)
	}
}

// answer gives every op err as its outcome.
func answer(ops []*writeOp, err error) {
	for _, op := range ops {
		op.err = err
		close(op.done)
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
