package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/follow"
	"github.com/agentrt/agentrt/session/internal/group"
	"github.com/agentrt/agentrt/session/internal/reqindex"
)

// migrations[v] takes the schema from version v to v+1; len(migrations) is
// the version this build writes. Append; never edit a migration that has
// shipped.
//
// Times are bigint unix microseconds, UTC. events.json is the whole event
// as json.Marshal writes it, kept as text (jsonb would reorder its keys).
var migrations = [][]string{
	{
		`CREATE TABLE sessions (
			tenant        text   NOT NULL,
			id            text   NOT NULL,
			agent         text   NOT NULL,
			status        text   NOT NULL,
			turn          int    NOT NULL,
			usage         text   NOT NULL,
			last_seq      bigint NOT NULL,
			metadata      text,
			created_at    bigint NOT NULL,
			updated_at    bigint NOT NULL,
			lease_owner   text,
			lease_token   bigint NOT NULL DEFAULT 0,
			lease_expires bigint NOT NULL DEFAULT 0,
			PRIMARY KEY (tenant, id)
		)`,
		`CREATE INDEX sessions_newest ON sessions (tenant, created_at DESC, id DESC)`,
		`CREATE INDEX sessions_status ON sessions (tenant, status, created_at DESC, id DESC)`,
		`CREATE INDEX sessions_all ON sessions (created_at DESC, tenant DESC, id DESC)`,
		`CREATE INDEX sessions_all_status ON sessions (status, created_at DESC, tenant DESC, id DESC)`,
		`CREATE TABLE events (
			tenant     text   NOT NULL,
			session_id text   NOT NULL,
			seq        bigint NOT NULL,
			type       text   NOT NULL,
			time       bigint NOT NULL,
			json       text   NOT NULL,
			PRIMARY KEY (tenant, session_id, seq)
		)`,
		`CREATE TABLE snapshots (
			tenant     text   NOT NULL,
			session_id text   NOT NULL,
			seq        bigint NOT NULL,
			data       bytea,
			PRIMARY KEY (tenant, session_id)
		)`,
	},
	// Version 2: control requests (session.Controller): the JSON of the
	// session.Control kept for the lease's owner, NULL when there is none,
	// found by owner through a partial index of the sessions that have one.
	{
		`ALTER TABLE sessions ADD COLUMN control text`,
		`CREATE INDEX sessions_control ON sessions (lease_owner) WHERE control IS NOT NULL`,
	},
	// Version 3: the inbox (session.Inbox). An input is a row keyed by
	// (tenant, id). Its seq comes from inbox_counter's one row, which a
	// Submit updates in its own statement: the row's lock makes submits
	// take their seqs one after another and commit in that order, so
	// that a reader never sees an input whose seq is below one it has
	// already seen (a sequence would hand out seqs in one order and
	// commit them in another). parts is the JSON array of
	// session.InputPart as text (jsonb would reorder the keys of data),
	// metadata a JSON object, NULL when empty; key and digest are ''
	// when not given, run_id and reason '' until answered or refused.
	//
	// inbox_key makes a key an input's once per tenant and source;
	// inbox_source reads a source's inputs in order (Inputs);
	// inbox_pending holds the pending inputs only, which Pending reads
	// and PendingSources groups by source.
	{
		`CREATE TABLE inbox_counter (
			id   int    NOT NULL PRIMARY KEY CHECK (id = 1),
			last bigint NOT NULL
		)`,
		`INSERT INTO inbox_counter (id, last) VALUES (1, 0)`,
		`CREATE TABLE inbox (
			tenant     text   NOT NULL,
			id         text   NOT NULL,
			seq        bigint NOT NULL,
			source     text   NOT NULL,
			session_id text   NOT NULL,
			parts      text   NOT NULL,
			metadata   text,
			key        text   NOT NULL,
			digest     text   NOT NULL,
			at         bigint NOT NULL,
			state      text   NOT NULL,
			run_id     text   NOT NULL DEFAULT '',
			reason     text   NOT NULL DEFAULT '',
			PRIMARY KEY (tenant, id)
		)`,
		`CREATE UNIQUE INDEX inbox_by_seq ON inbox (seq)`,
		`CREATE UNIQUE INDEX inbox_key ON inbox (tenant, source, key) WHERE key <> ''`,
		`CREATE INDEX inbox_source ON inbox (tenant, source, seq)`,
		`CREATE INDEX inbox_pending ON inbox (tenant, source, seq) WHERE state = 'pending'`,
	},
	// Version 4: the indexes of recovery and of a person's inbox. requests
	// holds the pending requests for people (session.RequestIndex): a row
	// per request, written by the commits of its input_required and
	// input_resolved events; data is the event's payload as JSON text,
	// asked the event's time, expires when it gets its default decision
	// (NULL: never), rounded up to the microsecond. requests_asked lists
	// a tenant's, oldest first; requests_expires, the ones with a
	// deadline, across tenants. Sessions written before have theirs
	// filled in from their logs (fills).
	//
	// sessions_leases and sessions_owners hold the running sessions only
	// (session.LeaseIndex), by lease expiry (0 when none is held) and by
	// owner, in the order of its bytes (so that the owners that begin
	// with a prefix are one range): what recovery looks through, without
	// the others.
	{
		`CREATE TABLE requests (
			tenant     text   NOT NULL,
			session_id text   NOT NULL,
			request_id text   NOT NULL,
			seq        bigint NOT NULL,
			agent      text   NOT NULL,
			kind       text   NOT NULL,
			asked      bigint NOT NULL,
			expires    bigint,
			data       text   NOT NULL,
			PRIMARY KEY (tenant, session_id, request_id)
		)`,
		`CREATE INDEX requests_asked ON requests (tenant, asked, session_id, seq)`,
		`CREATE INDEX requests_expires ON requests (expires, tenant, session_id, seq) WHERE expires IS NOT NULL`,
		`CREATE INDEX sessions_leases ON sessions (lease_expires, tenant, id) WHERE status = 'running'`,
		`CREATE INDEX sessions_owners ON sessions ((lease_owner COLLATE "C"), tenant, id) WHERE status = 'running' AND lease_owner IS NOT NULL`,
	},
	// Version 5: records kept with sessions (session.Records), a row per
	// record, deleted with the session: data is its JSON text, version
	// the count of its writes. Their names compare bytewise (COLLATE
	// "C"), as the other stores order them; records_kind lists a kind's
	// across tenants (KindRecords).
	{
		`CREATE TABLE records (
			tenant     text COLLATE "C" NOT NULL,
			session_id text COLLATE "C" NOT NULL,
			kind       text COLLATE "C" NOT NULL,
			key        text COLLATE "C" NOT NULL,
			id         text COLLATE "C" NOT NULL,
			data       text   NOT NULL,
			version    bigint NOT NULL,
			PRIMARY KEY (tenant, session_id, kind, key, id)
		)`,
		`CREATE INDEX records_kind ON records (kind, tenant, session_id, key, id)`,
	},
	// Version 6: an input's size (session.InboxInput.Size), which the
	// gateway's caps on a source add up over its pending inputs
	// (PendingOf, SubmitWithin) without reading their parts, from
	// inbox_pending, which holds it. An input stored before counts its
	// parts as stored, their JSON: a little over its content, never
	// under.
	//
	// And claims are dropped when released (session.Dropper): the
	// released claims' sessions earlier versions kept, one per source
	// ever served, go.
	{
		`ALTER TABLE inbox ADD COLUMN size bigint NOT NULL DEFAULT 0`,
		`UPDATE inbox SET size = octet_length(parts) WHERE state = 'pending'`,
		`DELETE FROM sessions WHERE left(id, 7) = '_claim.' AND lease_owner IS NULL AND last_seq = 0`,
		`DROP INDEX inbox_pending`,
		`CREATE INDEX inbox_pending ON inbox (tenant, source, seq) INCLUDE (size) WHERE state = 'pending'`,
	},
	// Version 7: the outbox (session.Outbox), a row per message owed,
	// written by the commit of its event and deleted with its session;
	// times in microseconds. outbox_pending is what claims look through.
	{
		`CREATE TABLE outbox (
			id         bigserial PRIMARY KEY,
			tenant     text   NOT NULL,
			session_id text   NOT NULL,
			seq        bigint NOT NULL,
			kind       text   NOT NULL,
			source     text   NOT NULL,
			state      text   NOT NULL DEFAULT 'pending',
			attempts   int    NOT NULL DEFAULT 0,
			due        bigint NOT NULL,
			owner      text   NOT NULL DEFAULT '',
			until      bigint NOT NULL DEFAULT 0,
			ref        text   NOT NULL DEFAULT '',
			error      text   NOT NULL DEFAULT '',
			created    bigint NOT NULL
		)`,
		`CREATE INDEX outbox_pending ON outbox (tenant, session_id, id) INCLUDE (due, owner, until) WHERE state = 'pending'`,
		`CREATE INDEX outbox_session ON outbox (tenant, session_id, id)`,
	},
	// Version 8: blobs (session.Blobs): the bytes of an image or a file,
	// kept once per tenant by their SHA-256 (hex); at in microseconds.
	{
		`CREATE TABLE blobs (
			tenant text   NOT NULL,
			hash   text   NOT NULL,
			type   text   NOT NULL,
			size   bigint NOT NULL,
			at     bigint NOT NULL,
			data   bytea  NOT NULL,
			PRIMARY KEY (tenant, hash)
		)`,
	},
}

// migrate brings the schema up to date under an advisory lock.
func (st *Store) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if st.schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+st.schema); err != nil {
				return err
			}
		}
		// One migrator at a time across processes (the key is arbitrary).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7422466823)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			id      int NOT NULL PRIMARY KEY CHECK (id = 1),
			version int NOT NULL
		)`); err != nil {
			return err
		}
		var version int
		switch err := tx.QueryRow(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&version); {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (id, version) VALUES (1, 0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("the database's schema is version %d, newer than this build's %d: use a newer agentrt", version, len(migrations))
		}
		for v := version; v < len(migrations); v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
				}
			}
			if fill := fills[v+1]; fill != nil {
				if err := fill(ctx, tx); err != nil {
					return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
				}
			}
		}
		_, err := tx.Exec(ctx, `UPDATE schema_version SET version = $1 WHERE id = 1`, len(migrations))
		return err
	})
}

// Commit appends c.Events, updates the session row and replaces the
// snapshot if c.Snapshot is set, in one transaction, and notifies the
// followers of other processes when it commits. The statements go in one
// round trip (a pgx batch).
func (st *Store) Commit(ctx context.Context, c *session.Commit) error {
	last := c.ExpectSeq + int64(len(c.Events))
	if err := c.Check(); err != nil {
		return fmt.Errorf("postgres: commit to session %q: %w", c.SessionID, err)
	}
	seqs := make([]int64, len(c.Events))
	types := make([]string, len(c.Events))
	times := make([]int64, len(c.Events))
	bodies := make([]string, len(c.Events))
	for i, ev := range c.Events {
		b, err := ev.AppendJSON(nil)
		if err != nil {
			return fmt.Errorf("postgres: commit to session %q: encoding event %d: %w", c.SessionID, ev.Seq, err)
		}
		seqs[i], types[i], times[i], bodies[i] = ev.Seq, string(ev.Type), ev.Time.UnixMicro(), string(b)
	}
	usage, err := json.Marshal(c.Usage)
	if err != nil {
		return fmt.Errorf("postgres: commit to session %q: %w", c.SessionID, err)
	}
	asked, resolved, err := reqindex.Changes(c.Events)
	if err != nil {
		return fmt.Errorf("postgres: commit to session %q: %w", c.SessionID, err)
	}
	now := c.Time
	if now.IsZero() {
		now = time.Now()
	}
	tenant := session.TenantOf(ctx)
	var snapSeq int64
	var snapData []byte
	if c.Snapshot != nil {
		snapSeq, snapData = c.Snapshot.Seq, []byte(c.Snapshot.Data)
	}
	// One statement, so one round trip and atomic on its own: the events,
	// the snapshot, the requests and the notification happen only if the
	// session row was updated, which is the seq and fence check (and, for
	// a commit with answers, that every input it answers is pending).
	w := &pendingCommit{tenant: tenant, id: c.SessionID, sql: commitSQL, args: []any{
		string(c.Status), c.Turn, string(usage), last, now.UnixMicro(), tenant, c.SessionID, c.ExpectSeq,
		c.Fence, st.now().UnixMicro(),
		seqs, types, times, bodies,
		notifyChannel, tenant + "\n" + c.SessionID + "\n" + st.self, len(c.Events) > 0,
		snapSeq, snapData, c.Snapshot != nil,
		c.Release && c.Fence != 0,
	}}
	requests := len(asked) > 0 || len(resolved) > 0
	switch {
	case len(c.Answers) > 0 && requests:
		w.sql, w.args = commitAnswersRequestsSQL, append(append(w.args, c.Answers, c.RunID), requestArgs(asked, resolved)...)
	case len(c.Answers) > 0:
		w.sql, w.args = commitAnswersSQL, append(w.args, c.Answers, c.RunID)
	case requests:
		w.sql, w.args = commitRequestsSQL, append(w.args, requestArgs(asked, resolved)...)
	}
	if len(c.Outbox) > 0 {
		w.sql = withOutbox[w.sql]
		seqs, kinds, sources := make([]int64, len(c.Outbox)), make([]string, len(c.Outbox)), make([]string, len(c.Outbox))
		for i, it := range c.Outbox {
			seqs[i], kinds[i], sources[i] = it.Seq, it.Kind, it.Source
		}
		w.args = append(w.args, seqs, kinds, sources)
	}
	err = st.commits.Do(ctx, w)
	if err == nil && w.updated == 0 {
		err = st.commitRefused(ctx, tenant, c)
	}
	if err != nil {
		return fmt.Errorf("postgres: commit to session %q: %w", c.SessionID, err)
	}
	if len(c.Events) > 0 && st.waiters.Any() {
		st.waiters.Committed(tenant, c.SessionID, c.Events)
	}
	return nil
}

// pendingCommit is a commit waiting in the group commit: its statement
// (commitSQL, or a variant of it) and arguments, and how many session
// rows it updated once written.
type pendingCommit struct {
	tenant, id string
	sql        string
	args       []any
	updated    int
}

// commitTimeout bounds the writing of a batch of commits, which no
// caller's context cancels.
const commitTimeout = 30 * time.Second

// flushCommits writes a batch of commits of many sessions in one round
// trip (a pgx batch, which Postgres runs as one implicit transaction: one
// WAL flush for all of them), their statements ordered by session so that
// two processes' batches lock session rows in the same order. A commit
// refused by its seq or fence check updates nothing and does not fail the
// batch (its caller finds out why). If the batch fails as a whole, each
// commit is written again on its own, so that each outcome is its own.
func (st *Store) flushCommits(ops []*group.Op[*pendingCommit]) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	one := func(op *group.Op[*pendingCommit]) {
		var notified int
		op.Answer(st.pool.QueryRow(ctx, op.W.sql, op.W.args...).Scan(&op.W.updated, &notified))
	}
	if len(ops) == 1 {
		one(ops[0])
		return
	}
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b *group.Op[*pendingCommit]) int {
		return cmp.Or(strings.Compare(a.W.tenant, b.W.tenant), strings.Compare(a.W.id, b.W.id))
	})
	var b pgx.Batch
	for _, op := range sorted {
		b.Queue(op.W.sql, op.W.args...)
	}
	br := st.pool.SendBatch(ctx, &b)
	var err error
	var notified int
	for _, op := range sorted {
		if err = br.QueryRow().Scan(&op.W.updated, &notified); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Each on its own, with a deadline of its own (the batch's may be
		// what failed). A batch that did commit before the error came
		// makes each retry a conflict (the seq check), never a second
		// write.
		for _, op := range ops {
			func() {
				rctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
				defer cancel()
				var notified int
				op.Answer(st.pool.QueryRow(rctx, op.W.sql, op.W.args...).Scan(&op.W.updated, &notified))
			}()
		}
		return
	}
	for _, op := range ops {
		op.Answer(nil)
	}
}

// commitSQL is a commit: the session row's update (which checks the seq
// and the fence), and only if it matched, the events, the snapshot and the
// notification. It returns how many rows were updated and notified.
const commitSQL = commitUpdate + commitWrites

// commitUpdate is commitSQL's update u, which returns the session's agent
// (the agent of the requests whose events name none).
const commitUpdate = `WITH u AS (` + updateSession + `
	RETURNING agent
), `

// commitRequestsSQL is commitSQL for a commit whose events ask or answer
// requests for people ($22 to $29, see requestWrites), and
// commitAnswersRequestsSQL commitAnswersSQL for one ($24 to $31).
var (
	commitRequestsSQL        = commitUpdate + requestWrites(22) + commitWrites
	commitAnswersRequestsSQL = commitAnswersUpdate + requestWrites(24) + commitWrites
)

// withOutbox are the commit statements for commits that owe messages
// (Commit.Outbox), by the statement for one that owes none: the items
// are three arrays after its parameters — seqs, kinds, sources — inserted
// due at the commit's time if its update matched.
var withOutbox = map[string]string{
	commitSQL:                commitUpdate + outboxWrites(22) + commitWrites,
	commitRequestsSQL:        commitUpdate + requestWrites(22) + outboxWrites(30) + commitWrites,
	commitAnswersSQL:         commitAnswersUpdate + outboxWrites(24) + commitWrites,
	commitAnswersRequestsSQL: commitAnswersUpdate + requestWrites(24) + outboxWrites(32) + commitWrites,
}

// outboxWrites inserts a commit's outbox items, parameters $n to $n+2.
func outboxWrites(n int) string {
	return fmt.Sprintf(`ob AS (
	INSERT INTO outbox (tenant, session_id, seq, kind, source, due, created)
	SELECT $6, $7, s, k, src, $5, $5 FROM unnest($%d::bigint[], $%d::text[], $%d::text[]) AS x(s, k, src)
	WHERE EXISTS (SELECT 1 FROM u)
), `, n, n+1, n+2)
}

// commitAnswersSQL is commitSQL for a commit with answers ($22, the ids,
// and $23, the run): the inputs are locked first, in the order of their
// ids (so that commits answering the same inputs do not deadlock), and
// only those still pending once their locks are held count (Read
// Committed checks a row a concurrent commit changed again); the session
// row is updated only if they all are, and they are marked answered only
// if it was. A commit earlier in the same batch that answered one of them
// has made it answered for this one.
const commitAnswersSQL = commitAnswersUpdate + commitWrites

// commitAnswersUpdate is commitAnswersSQL's updates: the inputs', then
// the session's u, which returns its agent.
const commitAnswersUpdate = `WITH a AS (
	SELECT id FROM inbox WHERE tenant = $6 AND id = ANY($22::text[]) AND state = 'pending' ORDER BY id FOR UPDATE
), u AS (` + updateSession + `
	AND (SELECT count(*) FROM a) = cardinality($22::text[])
	RETURNING agent
), ans AS (
	UPDATE inbox SET state = 'answered', run_id = $23
	WHERE tenant = $6 AND id IN (SELECT id FROM a) AND EXISTS (SELECT 1 FROM u)
), `

// updateSession is a commit's update of the session row, whose WHERE is
// the seq and fence check; commitSQL and commitAnswersSQL end it.
const updateSession = `
	UPDATE sessions SET status = $1, turn = $2, usage = $3, last_seq = $4, updated_at = $5,
		lease_owner = CASE WHEN $21::bool THEN NULL ELSE lease_owner END,
		lease_expires = CASE WHEN $21::bool THEN 0 ELSE lease_expires END,
		control = CASE WHEN $21::bool THEN NULL ELSE control END
	WHERE tenant = $6 AND id = $7 AND last_seq = $8
	AND (CASE WHEN $9::bigint <> 0 THEN lease_token = $9 ELSE (lease_owner IS NULL OR lease_expires <= $10) END)`

// commitWrites are what a commit writes if its update u matched, and the
// statement's result.
const commitWrites = `e AS (
	INSERT INTO events (tenant, session_id, seq, type, time, json)
	SELECT $6, $7, s, t, tm, j FROM unnest($11::bigint[], $12::text[], $13::bigint[], $14::text[]) AS x(s, t, tm, j)
	WHERE EXISTS (SELECT 1 FROM u)
), sn AS (
	INSERT INTO snapshots (tenant, session_id, seq, data)
	SELECT $6, $7, $18, $19 FROM u WHERE $20::bool
	ON CONFLICT (tenant, session_id) DO UPDATE SET seq = excluded.seq, data = excluded.data
), n AS (
	SELECT pg_notify($15, $16) FROM u WHERE $17::bool
)
SELECT (SELECT count(*) FROM u)::int, (SELECT count(*) FROM n)::int`

// commitRefused explains why a commit's update matched no row. It always
// returns an error.
func (st *Store) commitRefused(ctx context.Context, tenant string, c *session.Commit) error {
	var l session.Lease
	var last int64
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var err error
		l, last, err = st.leaseOf(ctx, tx, tenant, c.SessionID, false)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case c.Fence != 0 && c.Fence != l.Token:
		return fmt.Errorf("fence token %d, session's is %d: %w", c.Fence, l.Token, session.ErrFenced)
	case c.Fence == 0 && l.Owner != "" && st.now().Before(l.Expires):
		return fmt.Errorf("no fence token, and %s holds a live lease: %w", l.Owner, session.ErrFenced)
	case last == c.ExpectSeq && len(c.Answers) > 0:
		if err := st.unanswerable(ctx, tenant, c.Answers); err != nil {
			return err
		}
	}
	return fmt.Errorf("expected seq %d, session is at %d: %w", c.ExpectSeq, last, session.ErrConflict)
}

// leaseOf reads a session's lease and last seq in tx, locking its row if
// forUpdate; Owner is empty when none is held.
func (st *Store) leaseOf(ctx context.Context, tx pgx.Tx, tenant, id string, forUpdate bool) (session.Lease, int64, error) {
	q := `SELECT lease_owner, lease_token, lease_expires, last_seq FROM sessions WHERE tenant = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var (
		owner   *string
		l       = session.Lease{SessionID: id}
		expires int64
		last    int64
	)
	err := tx.QueryRow(ctx, q, tenant, id).Scan(&owner, &l.Token, &expires, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, 0, session.ErrNotFound
	}
	if err != nil {
		return l, 0, err
	}
	if owner != nil {
		l.Owner, l.Expires = *owner, time.UnixMicro(expires).UTC()
	}
	return l, last, nil
}

// Acquire gives owner the session's lease. See session.Leaser.
func (st *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	if owner == "" || ttl <= 0 {
		return session.Lease{}, fmt.Errorf("postgres: acquire %q: need an owner and a positive ttl", id)
	}
	tenant := session.TenantOf(ctx)
	var out session.Lease
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		l, _, err := st.leaseOf(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		l, err = l.Take(owner, st.now(), ttl)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions SET lease_owner = $1, lease_token = $2, lease_expires = $3 WHERE tenant = $4 AND id = $5`,
			l.Owner, l.Token, l.Expires.UnixMicro(), tenant, id); err != nil {
			return err
		}
		out = l
		return nil
	})
	if err != nil {
		return session.Lease{}, fmt.Errorf("postgres: acquire %q: %w", id, err)
	}
	return out, nil
}

// Renew extends l. See session.Leaser.
func (st *Store) Renew(ctx context.Context, l session.Lease, ttl time.Duration) (session.Lease, error) {
	l.Expires = st.now().Add(ttl).Truncate(time.Microsecond)
	err := st.leaseUpdate(ctx, l, `UPDATE sessions SET lease_expires = $5
		WHERE tenant = $1 AND id = $2 AND lease_token = $3 AND lease_owner = $4`, l.Expires.UnixMicro())
	if err != nil {
		return session.Lease{}, fmt.Errorf("postgres: renew lease of %q: %w", l.SessionID, err)
	}
	return l, nil
}

// Release ends l. See session.Leaser.
func (st *Store) Release(ctx context.Context, l session.Lease) error {
	err := st.leaseUpdate(ctx, l, `UPDATE sessions SET lease_owner = NULL, lease_expires = 0, control = NULL
		WHERE tenant = $1 AND id = $2 AND lease_token = $3 AND lease_owner = $4`)
	if err != nil {
		return fmt.Errorf("postgres: release lease of %q: %w", l.SessionID, err)
	}
	return nil
}

// Drop deletes the session whose lease l is. See session.Dropper.
func (st *Store) Drop(ctx context.Context, l session.Lease) error {
	err := st.leaseUpdate(ctx, l, `DELETE FROM sessions
		WHERE tenant = $1 AND id = $2 AND lease_token = $3 AND lease_owner = $4 AND last_seq = 0`)
	if errors.Is(err, errLeaseMatched) {
		err = fmt.Errorf("it holds events: %w", session.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: drop %q: %w", l.SessionID, err)
	}
	tenant := session.TenantOf(ctx)
	if st.waiters.Any() {
		st.waiters.Wake(tenant, l.SessionID)
	}
	return nil
}

// errLeaseMatched is leaseUpdate's when its statement changed nothing
// though l is the session's lease: another condition of the statement
// did not hold.
var errLeaseMatched = errors.New("the lease matched")

// leaseUpdate runs a renewal or release, which matches no row when l is
// not the session's lease.
func (st *Store) leaseUpdate(ctx context.Context, l session.Lease, q string, extra ...any) error {
	tenant := session.TenantOf(ctx)
	return pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, q, append([]any{tenant, l.SessionID, l.Token, l.Owner}, extra...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		cur, _, err := st.leaseOf(ctx, tx, tenant, l.SessionID, false)
		if err != nil {
			return err
		}
		if cur.Token == l.Token && cur.Owner == l.Owner && l.Owner != "" {
			return errLeaseMatched
		}
		return fmt.Errorf("token %d of %s, session's is %d of %s: %w", l.Token, l.Owner, cur.Token, cur.Owner, session.ErrFenced)
	})
}

// LoadSnapshot returns the session's latest snapshot, or nil if it has
// none.
func (st *Store) LoadSnapshot(ctx context.Context, id string) (*session.Snapshot, error) {
	var (
		seq  *int64
		data []byte
	)
	err := st.pool.QueryRow(ctx, `SELECT sn.seq, sn.data FROM sessions s
		LEFT JOIN snapshots sn ON sn.tenant = s.tenant AND sn.session_id = s.id
		WHERE s.tenant = $1 AND s.id = $2`, session.TenantOf(ctx), id).Scan(&seq, &data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, notFound("load snapshot of", id)
	case err != nil:
		return nil, fmt.Errorf("postgres: load snapshot of %q: %w", id, err)
	case seq == nil:
		return nil, nil
	}
	return &session.Snapshot{Seq: *seq, Data: data}, nil
}

// Events yields the session's events with seq > after, in order, pageSize
// at a time, holding no connection while it yields.
func (st *Store) Events(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		tenant := session.TenantOf(ctx)
		var exists bool
		if err := st.pool.QueryRow(ctx, `SELECT true FROM sessions WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&exists); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				yield(nil, notFound("events of", id))
			} else {
				yield(nil, fmt.Errorf("postgres: events of %q: %w", id, err))
			}
			return
		}
		from := max(after, 0)
		for {
			page, err := st.readPage(ctx, tenant, id, from)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ev := range page {
				if !yield(ev, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			from = page[len(page)-1].Seq
		}
	}
}

func (st *Store) readPage(ctx context.Context, tenant, id string, from int64) ([]*session.Event, error) {
	rows, err := st.pool.Query(ctx, `SELECT seq, json FROM events WHERE tenant = $1 AND session_id = $2 AND seq > $3
		ORDER BY seq LIMIT $4`, tenant, id, from, pageSize)
	if err != nil {
		return nil, fmt.Errorf("postgres: events of %q: %w", id, err)
	}
	defer rows.Close()
	var page []*session.Event
	for rows.Next() {
		var (
			seq int64
			raw string
		)
		if err := rows.Scan(&seq, &raw); err != nil {
			return nil, fmt.Errorf("postgres: events of %q: %w", id, err)
		}
		ev := new(session.Event)
		if err := json.Unmarshal([]byte(raw), ev); err != nil {
			return nil, fmt.Errorf("postgres: session %q event %d: undecodable row: %w", id, seq, err)
		}
		if ev.Seq != seq {
			return nil, fmt.Errorf("postgres: session %q event %d: corrupt row: it holds seq %d", id, seq, ev.Seq)
		}
		page = append(page, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: events of %q: %w", id, err)
	}
	return page, nil
}

// listen starts, once, the goroutine that LISTENs for other processes'
// commits and wakes this process's followers, and hands the relay's
// messages to its subscribers (relay.go); Close stops it. It returns
// a channel closed once the first LISTEN is in place (or failed), so that
// a Follow reads the log only when no later commit can go unheard.
func (st *Store) listen() <-chan struct{} {
	st.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		st.listenStop, st.listenDone = cancel, make(chan struct{})
		st.listenReady = make(chan struct{})
		go func() {
			defer close(st.listenDone)
			ready := st.listenReady
			for ctx.Err() == nil {
				st.listenOnceConn(ctx, ready)
				ready = nil
				if ctx.Err() == nil {
					// The connection broke: try again soon (then the
					// followers read what they did not hear).
					t := time.NewTimer(st.poll)
					select {
					case <-ctx.Done():
						t.Stop()
					case <-t.C:
					}
				}
			}
		}()
	})
	return st.listenReady
}

// listenOnceConn LISTENs on one connection until it fails or ctx ends,
// closing ready (if not nil) once listening, or on failure.
func (st *Store) listenOnceConn(ctx context.Context, ready chan struct{}) {
	again := ready == nil
	signal := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	defer signal()
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		return
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return
	}
	// The relay's channel too, on the same connection: the goroutine
	// and the connection serve both.
	if _, err := conn.Exec(ctx, st.relay.listenSQL()); err != nil {
		return
	}
	signal()
	if again {
		// Listening again after a break: what was committed meanwhile
		// was not heard.
		st.waiters.WakeAll()
	}
	st.relay.setListening(true)
	defer func() {
		st.relay.setListening(false)
		// The connection goes back to the pool: stop listening on it.
		uctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = conn.Exec(uctx, `UNLISTEN *`)
		cancel()
	}()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if !isCanceled(err) {
				conn.Conn().Close(context.Background()) // do not reuse a broken connection
			}
			return
		}
		if n.Channel == st.relay.channel {
			st.relay.notified(n.Payload)
			continue
		}
		// tenant\nid, and the committing Store's self: this Store's
		// commits were handed to its followers already.
		tenant, rest, ok := strings.Cut(n.Payload, "\n")
		id, from, _ := strings.Cut(rest, "\n")
		if ok && from != st.self && st.waiters.Any() {
			st.waiters.Wake(tenant, id)
		}
	}
}

// Follow yields the session's events after after, then each new one as it
// is committed, until ctx ends. A commit through this Store hands it its
// events, without a read; those of other processes are heard through
// LISTEN/NOTIFY and read from the log, with a read every
// WithPollInterval that nothing was heard as a safety net (a
// notification lost with a broken connection, or held up behind the
// relay's on the listening connection). See session.Follower.
func (st *Store) Follow(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		select {
		case <-st.listen():
		case <-ctx.Done():
			return
		}
		tenant := session.TenantOf(ctx)
		follow.Loop(ctx, &st.waiters, tenant, id, after, st.poll, func(after int64) iter.Seq2[*session.Event, error] {
			return st.Events(ctx, id, after)
		})(yield)
	}
}

// RequestControl keeps c for the owner of l. See session.Controller.
func (st *Store) RequestControl(ctx context.Context, id string, l session.Lease, c session.Control) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("postgres: request control of %q: %w", id, err)
	}
	tenant := session.TenantOf(ctx)
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET control = $1
			WHERE tenant = $2 AND id = $3 AND lease_owner = $4 AND lease_token = $5
			AND ($6 OR control IS NULL OR control::jsonb->>'kind' = 'steer')`, string(b), tenant, id, l.Owner, l.Token, c.Kind != session.ControlSteer)
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		cur, _, err := st.leaseOf(ctx, tx, tenant, id, false)
		if err != nil {
			return err
		}
		if cur.Owner == l.Owner && cur.Token == l.Token {
			return nil // a steering, with a stop kept: the stop stays
		}
		owner := cur.Owner
		if owner == "" {
			owner = "nobody"
		}
		return fmt.Errorf("its lease is %s's (token %d), not %s's (token %d): %w", owner, cur.Token, l.Owner, l.Token, session.ErrFenced)
	})
	if err != nil {
		return fmt.Errorf("postgres: request control of %q: %w", id, err)
	}
	return nil
}

// Controls returns the control requests kept for owner. See
// session.Controller.
func (st *Store) Controls(ctx context.Context, owner string) ([]session.SessionControl, error) {
	rows, err := st.pool.Query(ctx, `SELECT tenant, id, control FROM sessions WHERE control IS NOT NULL AND lease_owner = $1`, owner)
	if err != nil {
		return nil, fmt.Errorf("postgres: controls of %q: %w", owner, err)
	}
	defer rows.Close()
	var out []session.SessionControl
	for rows.Next() {
		var (
			sc  session.SessionControl
			raw string
		)
		if err := rows.Scan(&sc.Tenant, &sc.SessionID, &raw); err != nil {
			return nil, fmt.Errorf("postgres: controls of %q: %w", owner, err)
		}
		if err := json.Unmarshal([]byte(raw), &sc.Control); err != nil {
			return nil, fmt.Errorf("postgres: session %q: corrupt control request: %w", sc.SessionID, err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: controls of %q: %w", owner, err)
	}
	return out, nil
}
