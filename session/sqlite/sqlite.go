// Package sqlite is a session.Store on SQLite, through the pure-Go driver
// modernc.org/sqlite. It is agentrt's embedded default and passes the
// storetest suite.
//
// Open a store on a file; the directory is created if need be:
//
//	st, err := sqlite.Open(ctx, ".agentrt/agentrt.db")
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//
// The database runs in WAL mode with synchronous=NORMAL: a commit is
// atomic and survives a crash of the process; a power loss may lose the
// last commits, never corrupt the log. Several processes may open the same
// file: writes take SQLite's write lock up front (BEGIN IMMEDIATE) and wait
// for it up to a busy timeout of 10s, so concurrent writers queue instead
// of failing on a lock upgrade, and a stale commit still fails with
// session.ErrConflict.
//
// Writes of many sessions at once share transactions (a group commit):
// 1,000 sessions running a turn at once make 11,000 writes in 70 to 135
// transactions, and a commit is still answered only once it is durable.
//
// A write waits for the write lock only as long as its context allows.
// Once its transaction has begun it runs to completion without watching
// the context: it is short, and the driver then starts no goroutine per
// statement. Reads watch their context throughout.
//
// Times keep microsecond precision (event times, which live in the event
// JSON, keep nanoseconds) and come back in UTC.
//
// The store needs a database file: an in-memory database would be a
// different one for each of its connections.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"time"

	sqlitedrv "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/follow"
)

const (
	// defaultLimit is ListSessions' page size when the caller gives none.
	defaultLimit = 50
	// pageSize is how many events Events reads per query.
	pageSize = 256
	// busyTimeout is how long a write waits for another process's write
	// transaction, and a read for a lock it needs (rare under WAL).
	busyTimeout = 10 * time.Second
	// busyStep is how long SQLite's own busy handler waits on the writer
	// connection before Go code checks the context and tries again.
	busyStep = 100 * time.Millisecond
	// maxRowEvents and maxRowBytes bound the events of one row: a
	// commit larger than that (a fork, an import) takes several rows.
	maxRowEvents = 256
	maxRowBytes  = 256 << 10
	// sqliteBusy is SQLITE_BUSY, the primary result code.
	sqliteBusy = 5
	// sqliteReadOnly is SQLITE_READONLY, the primary result code: the
	// process may not write the file or its directory.
	sqliteReadOnly = 8
	// maxSeq is the largest seq an event may have: events are keyed by
	// log<<32 | seq.
	maxSeq = 1<<32 - 1
)

// Store is a session.Store on one SQLite database file.
//
// All methods are safe for concurrent use. Writes (CreateSession, Commit,
// DeleteSession, the lease calls, Submit, Refuse) go through one
// connection and a group commit: the writes of this process that arrive
// while a transaction is being written go together in the next one (a
// refused write changes nothing, so the others are kept; see writer),
// and each caller is answered once its transaction has committed. Other
// processes are kept out by SQLite's write lock. A checkpointer copies
// the WAL into the database file on a connection of its own. Reads use a
// pool of several read-only connections and, under WAL, never wait for
// writers. Events holds no connection while it yields.
type Store struct {
	w *sql.DB // writes: one connection, transactions BEGIN IMMEDIATE
	g *writer // the group commit of writes on w
	c *sql.DB // checkpoints: one connection (see checkpointer)
	k *checkpointer
	r *sql.DB // reads: several query_only connections

	now      func() time.Time // the clock of leases
	poll     time.Duration    // how often Follow looks for other processes' commits
	readOnly bool             // opened with ReadOnly: no writer (w, g, c and k are nil)

	// Follow's followers, by session: a commit of this process hands
	// them its events; another process's commit, found by the writer's
	// data_version (at its next transaction, or by others' look every
	// poll), makes them all read the log.
	waiters follow.Waiters
	others  sync.WaitGroup // the goroutine of lookForOthers
	foreign atomic.Int64   // other processes' commits found (Foreign)
	stop    chan struct{}  // closed by Close: lookForOthers returns

	// The statements of reads, prepared once by Open (those of writes
	// are the writer's: see writeSQL).
	getSession   *sql.Stmt // r
	loadSnapshot *sql.Stmt // r
	eventsPage   *sql.Stmt // r
	logOf        *sql.Stmt // r
	pendingOf    *sql.Stmt // r

	// reads holds the other reads' statements, prepared on r at their
	// first use, by query text: parsing a query costs SQLite more than
	// running it. The texts are the store's own, a few shapes each.
	reads sync.Map // string → *sql.Stmt

	closeOnce sync.Once
	closeErr  error
}

var (
	_ session.Store      = (*Store)(nil)
	_ session.Leaser     = (*Store)(nil)
	_ session.Dropper    = (*Store)(nil)
	_ session.Follower   = (*Store)(nil)
	_ session.Controller = (*Store)(nil)
)

// limitParam is the LIMIT of a query that binds it. Not a bare
// `LIMIT ?`: SQLite (3.47 on) reads a LIMIT's bound value while planning,
// which marks the statement to be compiled again whenever that parameter
// is bound, so a statement prepared once was parsed at every run anyway
// (most of the cost of a read of the inbox or the log). SQLite does not
// look into an expression (TestStatementsAreNotCompiledAgain).
const limitParam = `LIMIT ? + 0`

// sessionColumns are the columns of a session.Session (not log, which is
// the store's own).
const sessionColumns = `tenant, id, agent, status, turn, usage, last_seq, metadata, created_at, updated_at`

// lastRow is the key of the last events row of the session s, NULL if it
// has none: a seek back from the end of its log's range of events_key.
const lastRow = `(SELECT key FROM events WHERE key > (s.log << 32) AND key < ((s.log + 1) << 32) ORDER BY key DESC LIMIT 1)`

// headSeq is the last seq of the session s: its last row's, or last_seq
// when it has no events (a commit that leaves the session's row alone
// does not update last_seq).
const headSeq = `coalesce(` + lastRow + ` & ` + seqMask + `, s.last_seq)`

// seqMask takes the seq out of an events key.
const seqMask = `4294967295`

// selectColumns are the columns a session is read from, in a query
// FROM sessions s LEFT JOIN events e ON e.key = lastRow: sessionColumns,
// the lease, and the last events row's key, usage and time.
const selectColumns = `s.tenant, s.id, s.agent, s.status, s.turn, s.usage, s.last_seq, s.metadata, s.created_at, s.updated_at,
	s.lease_owner, s.lease_token, s.lease_expires, e.key, e.usage, e.time, s.control`

// withLastRow is the FROM of selectColumns, with the sessions table (or a
// query of it) as sessions.
func withLastRow(sessions string) string {
	return ` FROM ` + sessions + ` s LEFT JOIN events e ON e.key = ` + lastRow
}

// An Option configures Open.
type Option func(*Store)

// WithClock makes the store read the time from now for leases' expiry,
// so that tests control it. Processes sharing a database should share a
// clock (the machine's, by default).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithPollInterval sets how often Follow checks for events committed by
// other processes (commits through this Store wake it at once); the
// default is DefaultPollInterval.
func WithPollInterval(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.poll = d
		}
	}
}

// ReadOnly opens the database for reading only, for a process that may
// not write it (another user's file, a read-only directory): no directory,
// file or schema is created, the schema must be this build's, and every
// write fails with ErrReadOnly. Reads see the database as other processes
// commit to it. When the database's shared-memory file (-shm) does not
// exist and cannot be created, which SQLite needs to read a database in
// WAL mode safely, the database is read as immutable instead: its reads
// then fail, rather than see half a commit, if another process writes it
// meanwhile.
func ReadOnly() Option { return func(s *Store) { s.readOnly = true } }

// ErrReadOnly is the error of a write to a store opened with ReadOnly. The
// error of Open wraps it when the process may not write the database, so
// that a caller that only reads can open it again with ReadOnly.
var ErrReadOnly = errors.New("the database is read-only")

// DefaultPollInterval is how often Follow looks for other processes'
// commits unless WithPollInterval says otherwise.
const DefaultPollInterval = 100 * time.Millisecond

// Open opens the store in the SQLite database at dsnOrPath, creating the
// file, its directory and the schema as needed, and migrating an older
// schema forward. dsnOrPath is a file path, or a "file:" URI whose query
// parameters go to the driver (see modernc.org/sqlite's Driver.Open); the
// store adds its own pragmas after them, so a parameter given in the URI
// wins. A database written by a newer build is refused.
func Open(ctx context.Context, dsnOrPath string, opts ...Option) (*Store, error) {
	st := &Store{now: time.Now, poll: DefaultPollInterval}
	for _, o := range opts {
		o(st)
	}
	base, err := baseDSN(dsnOrPath, !st.readOnly)
	if err == nil {
		if st.readOnly {
			err = st.openReadOnly(ctx, base)
		} else {
			err = st.open(ctx, base)
		}
	}
	if err != nil {
		st.Close()
		if isReadOnly(err) && !st.readOnly {
			err = fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return nil, fmt.Errorf("sqlite: open %q: %w", dsnOrPath, err)
	}
	return st, nil
}

// baseDSN turns a path into a file: URI (so that no character of the path
// can be taken for a query), creating its directory when mkdir is set, and
// returns it, or a file: URI as it is.
func baseDSN(dsnOrPath string, mkdir bool) (string, error) {
	if dsnOrPath == "" {
		return "", errors.New("empty path")
	}
	if strings.HasPrefix(dsnOrPath, "file:") {
		return dsnOrPath, nil
	}
	abs, err := filepath.Abs(dsnOrPath)
	if err != nil {
		return "", err
	}
	if mkdir {
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return "", err
		}
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows volume: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p}).String(), nil
}

// withParams appends query parameters to a file: URI.
func withParams(dsn string, params ...string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + strings.Join(params, "&")
}

func (st *Store) open(ctx context.Context, base string) (err error) {
	common := []string{
		"_journal_mode=WAL",
		"_synchronous=NORMAL",
		// No table references another today (DeleteSession deletes from
		// each, which is cheaper than checking a key on every insert), but
		// any that does later is checked.
		"_foreign_keys=on",
		// The group commit's savepoints journal the pages they change;
		// in memory rather than in a temporary file.
		"_pragma=temp_store(memory)",
	}
	st.w, err = sql.Open("sqlite", withParams(base, append(common,
		fmt.Sprintf("_busy_timeout=%d", busyStep.Milliseconds()), "_txlock=immediate",
		// The pages a transaction of the group commit changes stay in
		// memory: the default cache (2 MB) makes the writer read pages
		// back from the file as soon as a few hundred sessions run at
		// once.
		"_pragma=cache_size(-65536)",
		fmt.Sprintf("_pragma=wal_autocheckpoint(%d)", autoCheckpointPages))...))
	if err != nil {
		return err
	}
	// SQLite has one writer per database; a second connection in this
	// process would only wait in the busy handler.
	st.w.SetMaxOpenConns(1)
	st.w.SetMaxIdleConns(1)
	st.w.SetConnMaxLifetime(0)
	st.w.SetConnMaxIdleTime(0)
	// The schema, and the switch to WAL, before any reader connects.
	if err := migrate(ctx, st.w); err != nil {
		return err
	}

	if err := st.openReaders(ctx, withParams(base, append(common,
		fmt.Sprintf("_busy_timeout=%d", busyTimeout.Milliseconds()), "_query_only=on")...)); err != nil {
		return err
	}
	if st.g, err = newWriter(ctx, st.w); err != nil {
		return err
	}
	if st.c, err = sql.Open("sqlite", withParams(base, append(common,
		fmt.Sprintf("_busy_timeout=%d", busyStep.Milliseconds()))...)); err != nil {
		return err
	}
	st.c.SetMaxOpenConns(1)
	st.k = newCheckpointer(st.c)
	st.g.ck = st.k
	st.g.foreign = func() {
		st.foreign.Add(1)
		st.waiters.WakeAll()
	}
	st.stop = make(chan struct{})
	st.others.Go(st.lookForOthers)
	return nil
}

var _ session.Foreign = (*Store)(nil)

// Foreign counts the times the store found that other processes had
// committed (see session.Foreign): within the poll interval of their
// commit.
func (st *Store) Foreign() int64 { return st.foreign.Load() }

// lookForOthers finds the commits of other processes while this one
// writes nothing, for the followers and for Foreign: every poll interval
// in which the writer began no transaction (which reads the data_version
// itself), it reads the data_version on the writer's connection
// (writer.look). One statement an interval for the store, however many
// follow: a follower reads the log only when a commit it was not handed
// happened.
func (st *Store) lookForOthers() {
	t := time.NewTicker(st.poll)
	defer t.Stop()
	began := st.g.began.Load()
	for {
		select {
		case <-t.C:
		case <-st.stop:
			return
		}
		now := st.g.began.Load()
		if now == began {
			st.g.look(context.Background())
		}
		began = now
	}
}

// openReaders opens the pool of read connections on dsn and prepares the
// statements of reads.
func (st *Store) openReaders(ctx context.Context, dsn string) (err error) {
	st.r, err = sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	st.r.SetMaxOpenConns(readers)
	st.r.SetMaxIdleConns(readers)
	st.r.SetConnMaxLifetime(0)
	st.r.SetConnMaxIdleTime(0)

	stmts := []struct {
		db    *sql.DB
		dst   **sql.Stmt
		query string
	}{
		{st.r, &st.getSession, `SELECT ` + selectColumns + withLastRow("sessions") + ` WHERE s.tenant = ? AND s.id = ?`},
		{st.r, &st.loadSnapshot, `SELECT sn.seq, sn.data FROM sessions s
			LEFT JOIN snapshots sn ON sn.tenant = s.tenant AND sn.session_id = s.id
			WHERE s.tenant = ? AND s.id = ?`},
		{st.r, &st.eventsPage, `SELECT key, n, json FROM events WHERE key > ? AND key < ? ORDER BY key ` + limitParam},
		{st.r, &st.logOf, `SELECT log FROM sessions WHERE tenant = ? AND id = ?`},
		{st.r, &st.pendingOf, pendingOfSQL},
	}
	for _, s := range stmts {
		if *s.dst, err = s.db.PrepareContext(ctx, s.query); err != nil {
			return fmt.Errorf("preparing %q: %w", s.query, err)
		}
	}
	return nil
}

// openReadOnly opens the store with readers only (see ReadOnly).
func (st *Store) openReadOnly(ctx context.Context, base string) error {
	params := []string{"mode=ro", fmt.Sprintf("_busy_timeout=%d", busyTimeout.Milliseconds()), "_query_only=on"}
	err := st.openReaders(ctx, withParams(base, params...))
	if err == nil {
		err = checkVersion(ctx, st.r)
	}
	if err != nil && isReadOnly(err) {
		// A database in WAL mode whose -shm cannot be created: read it
		// as a file nobody writes.
		st.closeReaders()
		params[0] = "immutable=1"
		if err = st.openReaders(ctx, withParams(base, params...)); err == nil {
			err = checkVersion(ctx, st.r)
		}
	}
	return err
}

// closeReaders closes the read statements and connections.
func (st *Store) closeReaders() {
	for _, s := range []**sql.Stmt{&st.getSession, &st.loadSnapshot, &st.eventsPage, &st.logOf, &st.pendingOf} {
		if *s != nil {
			(*s).Close()
			*s = nil
		}
	}
	if st.r != nil {
		st.r.Close()
		st.r = nil
	}
}

// keyRange returns the bounds of the keys of the events of log number log:
// lo <= key < hi.
func keyRange(log int64) (lo, hi int64) { return log << 32, (log + 1) << 32 }

// write runs fn in a write transaction through the group commit (see
// group.write): fn's changes are kept if it returns nil, and are durable
// when write returns nil.
func (st *Store) write(ctx context.Context, fn writeFn) error {
	if st.readOnly {
		return ErrReadOnly
	}
	return st.g.write(ctx, fn)
}

// write runs fn in a write transaction of its own (BEGIN IMMEDIATE) on
// db, and commits it if fn returns nil; Open's migrations use it.
func write(ctx context.Context, db *sql.DB, fn func(ctx context.Context, tx *sql.Tx) error) (err error) {
	start := time.Now()
	var conn *sql.Conn
	for {
		// A new connection sets its pragmas, WAL among them, which needs
		// the lock another process opening the same new database may
		// hold: wait for it as for the write lock.
		if conn, err = db.Conn(ctx); err == nil {
			break
		}
		if !isBusy(err) || time.Since(start) >= busyTimeout {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the database lock: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	defer conn.Close()
	bg := context.WithoutCancel(ctx)
	var tx *sql.Tx
	for {
		tx, err = conn.BeginTx(bg, nil)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Since(start) >= busyTimeout {
			return err
		}
		// SQLite has normally waited busyStep already; the pause only
		// keeps a busy error that comes back at once from spinning.
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the write lock: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err := fn(bg, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// isBusy reports whether err is SQLite's SQLITE_BUSY: another connection
// holds the lock.
func isBusy(err error) bool {
	var e *sqlitedrv.Error
	return errors.As(err, &e) && e.Code()&0xff == sqliteBusy
}

// isReadOnly reports whether err is SQLite's refusal to write a database
// the process may not write.
func isReadOnly(err error) bool {
	var e *sqlitedrv.Error
	return errors.As(err, &e) && e.Code()&0xff == sqliteReadOnly
}

// prepared returns the statement of query on the read pool, prepared
// once.
func (st *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := st.reads.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := st.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := st.reads.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

// query runs a read through its prepared statement.
func (st *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := st.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (st *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := st.prepared(ctx, query)
	if err != nil {
		// A Row that carries err: the query fails again, and says why.
		return st.r.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// Close closes the database. It is idempotent: later calls return nil.
// Calls made after Close fail.
func (st *Store) Close() error {
	st.closeOnce.Do(func() {
		var errs []error
		for _, s := range []*sql.Stmt{st.getSession, st.loadSnapshot, st.eventsPage, st.logOf, st.pendingOf} {
			if s != nil {
				errs = append(errs, s.Close())
			}
		}
		st.reads.Range(func(_, s any) bool {
			errs = append(errs, s.(*sql.Stmt).Close())
			return true
		})
		if st.stop != nil {
			close(st.stop)
			st.others.Wait()
		}
		if st.g != nil {
			errs = append(errs, st.g.close())
		}
		if st.k != nil {
			st.k.close()
		}
		for _, db := range []*sql.DB{st.r, st.c, st.w} {
			if db != nil {
				errs = append(errs, db.Close())
			}
		}
		if err := errors.Join(errs...); err != nil {
			st.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return st.closeErr
}

// CreateSession stores s. LastSeq is ignored: a new session has no
// events. A zero CreatedAt becomes the current time, and a zero UpdatedAt
// becomes CreatedAt.
func (st *Store) CreateSession(ctx context.Context, s *session.Session) error {
	_, _, _, err := st.create(ctx, s, "", 0)
	return err
}

// CreateOrAcquire gives owner the lease of session s.ID, creating it if
// need be. See session.LeasedCreator.
func (st *Store) CreateOrAcquire(ctx context.Context, s *session.Session, owner string, ttl time.Duration) (*session.Session, session.Lease, bool, error) {
	if owner == "" || ttl <= 0 {
		return nil, session.Lease{}, false, fmt.Errorf("sqlite: create or acquire %q: need an owner and a positive ttl", s.ID)
	}
	return st.create(ctx, s, owner, ttl)
}

// create stores s, leased to owner if owner is not empty; if s exists,
// it takes owner's lease of it (as Acquire) if owner is not empty, else
// it fails with ErrExists. It returns the session as stored, the lease
// and whether it created s.
func (st *Store) create(ctx context.Context, s *session.Session, owner string, ttl time.Duration) (*session.Session, session.Lease, bool, error) {
	got, l, created, err := st.createOrAcquire(ctx, s, owner, ttl)
	if err != nil {
		return nil, session.Lease{}, false, fmt.Errorf("sqlite: create session %q: %w", s.ID, err)
	}
	return got, l, created, nil
}

func (st *Store) createOrAcquire(ctx context.Context, s *session.Session, owner string, ttl time.Duration) (*session.Session, session.Lease, bool, error) {
	fail := func(err error) (*session.Session, session.Lease, bool, error) {
		return nil, session.Lease{}, false, err
	}
	if s.ID == "" {
		return fail(errors.New("empty id"))
	}
	tenant := session.TenantOf(ctx)
	if s.Tenant != "" && s.Tenant != tenant {
		return fail(fmt.Errorf("its tenant %q is not the context's %q", s.Tenant, tenant))
	}
	usage, err := json.Marshal(s.Usage)
	if err != nil {
		return fail(err)
	}
	var metadata any // NULL when empty
	if len(s.Metadata) > 0 {
		b, err := json.Marshal(s.Metadata)
		if err != nil {
			return fail(err)
		}
		metadata = string(b)
	}
	created, updated := s.CreatedAt, s.UpdatedAt
	if created.IsZero() {
		created = time.Now()
	}
	if updated.IsZero() {
		updated = created
	}
	var (
		l    session.Lease // the new session's, or the one acquired
		made bool
		got  *session.Session // the one that exists
	)
	err = st.write(ctx, func(ctx context.Context, tx *wtx) error {
		l, made, got = session.Lease{}, false, nil // a write may run again (retryAlone)
		delete(st.g.heads, headKey{tenant, s.ID})
		var (
			first      session.Lease // a new session's: token 1
			leaseOwner any           // NULL when not leased
			expires    int64
		)
		if owner != "" {
			first, _ = (session.Lease{SessionID: s.ID}).Take(owner, st.now(), ttl)
			leaseOwner, expires = owner, first.Expires.UnixMicro()
		}
		n, err := tx.exec(sInsertSession, tenant, s.ID, s.Agent, string(s.Status), s.Turn,
			string(usage), metadata, created.UnixMicro(), updated.UnixMicro(), leaseOwner, first.Token, expires)
		switch {
		case err != nil:
			return err
		case n == 1:
			l, made = first, true
			return nil
		case owner == "":
			return refuse(session.ErrExists)
		}
		// It exists: its lease, as Acquire takes it. The INSERT changed
		// nothing.
		var token int64
		if got, token, err = scanSessionToken(wrow{tx, sGetSession, []any{tenant, s.ID}}); err != nil {
			return err
		}
		cur := session.Lease{SessionID: s.ID, Token: token}
		if got.Lease != nil {
			cur = *got.Lease
		}
		if l, err = cur.Take(owner, st.now(), ttl); err != nil {
			return refuse(err) // a LeaseHeldError
		}
		_, err = tx.exec(sSetLease, l.Owner, l.Token, l.Expires.UnixMicro(), tenant, s.ID)
		return err
	})
	if err != nil {
		return fail(err)
	}
	if made {
		s.Tenant = tenant
		got = new(session.Session)
		*got = *s
		got.LastSeq, got.Metadata = 0, maps.Clone(s.Metadata)
		got.CreatedAt, got.UpdatedAt = time.UnixMicro(created.UnixMicro()).UTC(), time.UnixMicro(updated.UnixMicro()).UTC()
	}
	got.Lease = &l
	return got, l, made, nil
}

// GetSession returns the session's row.
func (st *Store) GetSession(ctx context.Context, id string) (*session.Session, error) {
	s, err := scanSession(st.getSession.QueryRowContext(ctx, session.TenantOf(ctx), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("get session", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get session %q: %w", id, err)
	}
	return s, nil
}

// ListSessions returns sessions newest first: by CreatedAt, then by ID,
// both descending (then by tenant before ID across tenants).
func (st *Store) ListSessions(ctx context.Context, opt session.ListOptions) ([]*session.Session, error) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	tenant := session.TenantOf(ctx)
	var where []string
	var args []any
	if !opt.AllTenants {
		where, args = append(where, "tenant = ?"), append(args, tenant)
	}
	from := `sessions`
	switch opt.Status {
	case "":
	case session.StatusRunning, session.StatusWaiting:
		// The index of these few (see schema version 5), which the
		// planner would pass over for one in the order of the listing.
		// It may use it when the query has the index's own WHERE.
		from += ` INDEXED BY sessions_active`
		where = append(where, "status IN ('running', 'waiting')", "status = '"+string(opt.Status)+"'")
	default:
		// +?, not ?: a parameter compared with the constant of a partial
		// index's WHERE (sessions_active) would have the statement
		// compiled again at every run (see limitParam).
		where, args = append(where, "status = +?"), append(args, string(opt.Status))
	}
	if opt.Agent != "" {
		where, args = append(where, "agent = ?"), append(args, opt.Agent)
	}
	if opt.SkipHidden {
		// In the query, so that a page is full (session.Hidden's two
		// prefixes are seven bytes long).
		where = append(where, "substr(id, 1, 7) NOT IN ('_rules.', '_claim.')")
	}
	order := "created_at DESC, id DESC"
	if opt.AllTenants {
		order = "created_at DESC, tenant DESC, id DESC"
	}
	if opt.After != "" {
		ct := tenant
		if opt.AllTenants {
			ct = cmpOr(opt.AfterTenant, session.DefaultTenant)
		}
		created := opt.AfterCreated.UnixMicro()
		if opt.AfterCreated.IsZero() {
			err := st.queryRow(ctx, `SELECT created_at FROM sessions WHERE tenant = ? AND id = ?`, ct, opt.After).Scan(&created)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, notFound("list sessions after", opt.After)
			}
			if err != nil {
				return nil, fmt.Errorf("sqlite: list sessions: %w", err)
			}
		}
		if opt.AllTenants {
			where, args = append(where, "(created_at, tenant, id) < (?, ?, ?)"), append(args, created, ct, opt.After)
		} else {
			where, args = append(where, "(created_at, id) < (?, ?)"), append(args, created, opt.After)
		}
	}
	q := `SELECT * FROM ` + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY ` + order + ` ` + limitParam
	q = `SELECT ` + selectColumns + withLastRow("("+q+")") + ` ORDER BY s.` + strings.ReplaceAll(order, ", ", ", s.")
	rows, err := st.query(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	defer rows.Close()
	var out []*session.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list sessions: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// scanSession reads a row of selectColumns.
func scanSession(row interface{ Scan(...any) error }) (*session.Session, error) {
	s, _, err := scanSessionToken(row)
	return s, err
}

// scanSessionToken is scanSession, and the session's lease token, which
// outlives a release.
func scanSessionToken(row interface{ Scan(...any) error }) (*session.Session, int64, error) {
	var (
		s                session.Session
		status           string
		usage, metadata  []byte
		created, updated int64
		leaseOwner       sql.NullString
		leaseToken       int64
		leaseExpires     int64
		lastKey, lastAt  sql.NullInt64
		lastUsage        []byte
		control          []byte
	)
	if err := row.Scan(&s.Tenant, &s.ID, &s.Agent, &status, &s.Turn, &usage, &s.LastSeq, &metadata, &created, &updated,
		&leaseOwner, &leaseToken, &leaseExpires, &lastKey, &lastUsage, &lastAt, &control); err != nil {
		return nil, 0, err
	}
	if control != nil {
		s.Control = new(session.Control)
		if err := json.Unmarshal(control, s.Control); err != nil {
			return nil, 0, fmt.Errorf("session %q: corrupt control request: %w", s.ID, err)
		}
	}
	// Commits since the row's last update left it alone: their last
	// row has the session's seq, usage and time.
	if seq := lastKey.Int64 & maxSeq; lastKey.Valid && seq > s.LastSeq {
		s.LastSeq = seq
		if lastUsage != nil {
			usage = lastUsage
		}
		if lastAt.Valid {
			updated = lastAt.Int64
		}
	}
	if leaseOwner.Valid {
		s.Lease = &session.Lease{SessionID: s.ID, Owner: leaseOwner.String, Token: leaseToken, Expires: time.UnixMicro(leaseExpires).UTC()}
	}
	s.Status = session.Status(status)
	if err := json.Unmarshal(usage, &s.Usage); err != nil {
		return nil, 0, fmt.Errorf("session %q: corrupt usage: %w", s.ID, err)
	}
	if metadata != nil {
		if err := json.Unmarshal(metadata, &s.Metadata); err != nil {
			return nil, 0, fmt.Errorf("session %q: corrupt metadata: %w", s.ID, err)
		}
	}
	s.CreatedAt = time.UnixMicro(created).UTC()
	s.UpdatedAt = time.UnixMicro(updated).UTC()
	return &s, leaseToken, nil
}

// DeleteSession removes a session, its events, its snapshot and its
// pending requests, in one transaction.
func (st *Store) DeleteSession(ctx context.Context, id string) error {
	tenant := session.TenantOf(ctx)
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		delete(st.g.heads, headKey{tenant, id})
		var log sql.NullInt64
		err := tx.queryRow(sDeleteSession, []any{tenant, id}, &log)
		if errors.Is(err, sql.ErrNoRows) {
			return refuse(session.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if log.Valid {
			lo, hi := keyRange(log.Int64)
			if _, err := tx.exec(sDeleteEvents, lo, hi); err != nil {
				return err
			}
		}
		if _, err := tx.exec(sDeleteSessionRequests, tenant, id); err != nil {
			return err
		}
		if _, err := tx.exec(sDeleteSessionRecords, tenant, id); err != nil {
			return err
		}
		if _, err := tx.exec(sDeleteSessionOutbox, tenant, id); err != nil {
			return err
		}
		_, err = tx.exec(sDeleteSnapshot, tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete session %q: %w", id, err)
	}
	if st.waiters.Any() {
		st.waiters.Wake(tenant, id)
	}
	return nil
}

func notFound(op, id string) error {
	return fmt.Errorf("sqlite: %s %q: %w", op, id, session.ErrNotFound)
}
