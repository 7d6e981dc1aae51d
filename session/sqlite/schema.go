package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/reqindex"
)

// migrations[v] takes the schema from version v to version v+1, so
// len(migrations) is the version this build writes. Append to it; never
// edit a migration that has shipped.
//
// Events are stored a row per commit, in the order they were written
// (their rowid), and found by key, log<<32 | seq of the row's last event,
// where log is a number the session gets from the logs counter at its
// first event and never gives back: a session's log is one range of the
// unique index events_key, so a read is a range scan, and the rows of the
// many sessions a transaction of the group commit writes append at the
// end of the table. That bounds seq below 2^32 and the number of logs
// below 2^31. (A WITHOUT ROWID table keyed by (session_id, seq) would need
// no log number, but its rows spill into overflow pages above ~1 KB, which
// commits often are; version 1 to 3 keyed the table itself by
// log<<32 | seq, see version 4; version 4 held an event a row, see
// version 5.)
//
// Times are INTEGER unix microseconds, UTC. events.json is the row's
// events as json.Marshal produces them, each on a line of its own (JSON
// never holds a raw newline). metadata is a JSON object, NULL when empty;
// usage is a JSON model.Usage.
var migrations = [][]string{
	{
		`CREATE TABLE sessions (
			id         TEXT    NOT NULL PRIMARY KEY,
			agent      TEXT    NOT NULL,
			status     TEXT    NOT NULL,
			turn       INTEGER NOT NULL,
			usage      TEXT    NOT NULL,
			last_seq   INTEGER NOT NULL,
			metadata   TEXT,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL,
			log        INTEGER -- NULL until the first event
		) WITHOUT ROWID`,
		`CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC)`,
		`CREATE TABLE logs (
			id   INTEGER PRIMARY KEY CHECK (id = 1),
			next INTEGER NOT NULL
		)`,
		`INSERT INTO logs (id, next) VALUES (1, 1)`,
		`CREATE TABLE events (
			key        INTEGER PRIMARY KEY, -- log<<32 | seq
			session_id TEXT    NOT NULL,
			seq        INTEGER NOT NULL,
			type       TEXT    NOT NULL,
			time       INTEGER NOT NULL,
			json       TEXT    NOT NULL
		)`,
		`CREATE TABLE snapshots (
			session_id TEXT    NOT NULL PRIMARY KEY,
			seq        INTEGER NOT NULL,
			data       BLOB
		)`,
	},
	// Version 2: leases with fencing (session.Leaser), and listing by
	// status (runtime recovery lists the running sessions). lease_token
	// survives a release: the next owner gets lease_token+1.
	{
		`ALTER TABLE sessions ADD COLUMN lease_owner TEXT`,
		`ALTER TABLE sessions ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE sessions ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0`,
		`CREATE INDEX sessions_status ON sessions (status, created_at DESC, id DESC)`,
	},
	// Version 3: tenants. A session is keyed by (tenant, id), so that two
	// tenants may use the same id; existing sessions belong to "default".
	// Listing is per tenant (sessions_newest, sessions_status) or across
	// tenants for recovery (sessions_all, sessions_all_status).
	{
		`CREATE TABLE sessions_v3 (
			tenant        TEXT    NOT NULL,
			id            TEXT    NOT NULL,
			agent         TEXT    NOT NULL,
			status        TEXT    NOT NULL,
			turn          INTEGER NOT NULL,
			usage         TEXT    NOT NULL,
			last_seq      INTEGER NOT NULL,
			metadata      TEXT,
			created_at    INTEGER NOT NULL,
			updated_at    INTEGER NOT NULL,
			log           INTEGER,
			lease_owner   TEXT,
			lease_token   INTEGER NOT NULL DEFAULT 0,
			lease_expires INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (tenant, id)
		) WITHOUT ROWID`,
		`INSERT INTO sessions_v3 SELECT 'default', id, agent, status, turn, usage, last_seq, metadata, created_at, updated_at,
			log, lease_owner, lease_token, lease_expires FROM sessions`,
		`DROP TABLE sessions`,
		`ALTER TABLE sessions_v3 RENAME TO sessions`,
		`CREATE INDEX sessions_newest ON sessions (tenant, created_at DESC, id DESC)`,
		`CREATE INDEX sessions_status ON sessions (tenant, status, created_at DESC, id DESC)`,
		`CREATE INDEX sessions_all ON sessions (created_at DESC, tenant DESC, id DESC)`,
		`CREATE INDEX sessions_all_status ON sessions (status, created_at DESC, tenant DESC, id DESC)`,
		`CREATE TABLE snapshots_v3 (
			tenant     TEXT    NOT NULL,
			session_id TEXT    NOT NULL,
			seq        INTEGER NOT NULL,
			data       BLOB,
			PRIMARY KEY (tenant, session_id)
		)`,
		`INSERT INTO snapshots_v3 SELECT 'default', session_id, seq, data FROM snapshots`,
		`DROP TABLE snapshots`,
		`ALTER TABLE snapshots_v3 RENAME TO snapshots`,
	},
	// Version 4: events in the order they were written. Keyed by
	// log<<32 | seq, the rows of many sessions running at once went into
	// as many places of the table's b-tree: a transaction of the group
	// commit touched a page per session and split pages in the middle of
	// the tree. The rows now append at the end (their rowid), and the
	// unique index events_key, whose entries are a few bytes, keeps a
	// session's log one range and a seq unique.
	{
		`CREATE TABLE events_v4 (
			id         INTEGER PRIMARY KEY, -- the order of writing
			key        INTEGER NOT NULL,    -- log<<32 | seq
			session_id TEXT    NOT NULL,
			seq        INTEGER NOT NULL,
			type       TEXT    NOT NULL,
			time       INTEGER NOT NULL,
			json       TEXT    NOT NULL
		)`,
		`INSERT INTO events_v4 (key, session_id, seq, type, time, json)
			SELECT key, session_id, seq, type, time, json FROM events ORDER BY key`,
		`DROP TABLE events`,
		`ALTER TABLE events_v4 RENAME TO events`,
		`CREATE UNIQUE INDEX events_key ON events (key)`,
	},
	// Version 5: a row per commit, commits that leave the session's row
	// alone, and one status index. A commit's events go in one row, one JSON object a
	// line, keyed by the seq of its last event: a row costs SQLite about
	// as much to insert whatever its size, and a single-row INSERT needs
	// no statement journal. n is how many events the row holds, so its
	// first is key's seq - n + 1. The columns that copied fields of the
	// event are gone; version 4's rows hold one event each.
	//
	// A commit that changes neither the session's status nor its turn,
	// nor releases its lease (most commits of a run) writes its events'
	// row only, with the commit's usage and time: the session's last_seq,
	// usage and updated_at are those of its last events row when that is
	// past last_seq (see lastRow). Rewriting the session's row (and the
	// page it is on) for every commit cost as much as the events.
	{
		`CREATE TABLE events_v5 (
			id    INTEGER PRIMARY KEY, -- the order of writing
			key   INTEGER NOT NULL,    -- log<<32 | the seq of the row's last event
			n     INTEGER NOT NULL,    -- how many events the row holds
			json  TEXT    NOT NULL,    -- the events, one JSON object a line
			usage TEXT,                -- the session's usage after the commit (NULL before version 5)
			time  INTEGER              -- the commit's time (NULL before version 5)
		)`,
		`INSERT INTO events_v5 (key, n, json) SELECT key, 1, json FROM events ORDER BY id`,
		`DROP TABLE events`,
		`ALTER TABLE events_v5 RENAME TO events`,
		`CREATE UNIQUE INDEX events_key ON events (key)`,
		// Listing by status: the sessions a run goes on in (running,
		// waiting), which recovery lists, across tenants, in an index of
		// their own; other statuses by scanning a tenant's sessions.
		// Each status index took two changes per status change, and a
		// session changes status twice a run.
		`DROP INDEX sessions_status`,
		`DROP INDEX sessions_all_status`,
		`CREATE INDEX sessions_active ON sessions (status, created_at DESC, tenant DESC, id DESC)
			WHERE status IN ('running', 'waiting')`,
	},
	// Version 6: control requests (session.Controller). control is the
	// JSON of the session.Control kept for the lease's owner, NULL when
	// there is none; an owner finds the requests made to it through the
	// partial index, which holds only the sessions that have one.
	{
		`ALTER TABLE sessions ADD COLUMN control TEXT`,
		`CREATE INDEX sessions_control ON sessions (lease_owner) WHERE control IS NOT NULL`,
	},
	// Version 7: the inbox (session.Inbox). An input is a row, keyed by
	// (tenant, id); seq is its rowid, which AUTOINCREMENT never hands out
	// twice (a plain rowid may come back after the newest row is deleted,
	// and a table without an INTEGER PRIMARY KEY may be renumbered by
	// VACUUM): the order inputs came in, since SQLite has one writer.
	// parts is the JSON array of session.InputPart, metadata a JSON
	// object, NULL when empty; key and digest are '' when not given,
	// run_id and reason '' until answered or refused.
	//
	// inbox_key makes a key an input's once per tenant and source, across
	// processes; inbox_source reads a source's inputs in order
	// (Inputs); inbox_pending holds only the pending inputs, which
	// Pending reads and PendingSources groups by source.
	{
		`CREATE TABLE inbox (
			seq        INTEGER PRIMARY KEY AUTOINCREMENT,
			tenant     TEXT    NOT NULL,
			id         TEXT    NOT NULL,
			source     TEXT    NOT NULL,
			session_id TEXT    NOT NULL,
			parts      TEXT    NOT NULL,
			metadata   TEXT,
			key        TEXT    NOT NULL,
			digest     TEXT    NOT NULL,
			at         INTEGER NOT NULL,
			state      TEXT    NOT NULL,
			run_id     TEXT    NOT NULL DEFAULT '',
			reason     TEXT    NOT NULL DEFAULT '',
			UNIQUE (tenant, id)
		)`,
		`CREATE UNIQUE INDEX inbox_key ON inbox (tenant, source, key) WHERE key != ''`,
		`CREATE INDEX inbox_source ON inbox (tenant, source, seq)`,
		`CREATE INDEX inbox_pending ON inbox (tenant, source, seq) WHERE state = 'pending'`,
	},
	// Version 8: the indexes of recovery and of a person's inbox. requests
	// holds the pending requests for people (session.RequestIndex): a row
	// per request, written by the commits of its input_required and
	// input_resolved events; data is the event's payload as JSON, asked
	// the event's time, expires when it gets its default decision (NULL:
	// never), rounded up to the microsecond. requests_asked lists a
	// tenant's, oldest first; requests_expires, the ones with a deadline,
	// across tenants. Sessions written before have theirs filled in from
	// their logs (fills).
	//
	// sessions_leases and sessions_owners hold the running sessions only
	// (session.LeaseIndex), by lease expiry (0 when none is held) and by
	// owner: what recovery looks through, without the others.
	{
		`CREATE TABLE requests (
			tenant     TEXT    NOT NULL,
			session_id TEXT    NOT NULL,
			request_id TEXT    NOT NULL,
			seq        INTEGER NOT NULL,
			agent      TEXT    NOT NULL,
			kind       TEXT    NOT NULL,
			asked      INTEGER NOT NULL,
			expires    INTEGER,
			data       TEXT    NOT NULL,
			UNIQUE (tenant, session_id, request_id)
		)`,
		`CREATE INDEX requests_asked ON requests (tenant, asked, session_id, seq)`,
		`CREATE INDEX requests_expires ON requests (expires, tenant, session_id, seq) WHERE expires IS NOT NULL`,
		`CREATE INDEX sessions_leases ON sessions (lease_expires, tenant, id) WHERE status = 'running'`,
		`CREATE INDEX sessions_owners ON sessions (lease_owner, tenant, id) WHERE status = 'running' AND lease_owner IS NOT NULL`,
	},
	// Version 9: records kept with sessions (session.Records), a row per
	// record, deleted with the session: data is its JSON, version the
	// count of its writes. records_kind lists a kind's across tenants
	// (KindRecords).
	{
		`CREATE TABLE records (
			tenant     TEXT    NOT NULL,
			session_id TEXT    NOT NULL,
			kind       TEXT    NOT NULL,
			key        TEXT    NOT NULL,
			id         TEXT    NOT NULL,
			data       TEXT    NOT NULL,
			version    INTEGER NOT NULL,
			PRIMARY KEY (tenant, session_id, kind, key, id)
		) WITHOUT ROWID`,
		`CREATE INDEX records_kind ON records (kind, tenant, session_id, key, id)`,
	},
	// Version 10: an input's size (session.InboxInput.Size), which the
	// gateway's caps on a source add up over its pending inputs
	// (PendingOf, SubmitWithin) without reading their parts. An input
	// stored before counts its parts as stored, their JSON: a little over
	// its content, never under. inbox_pending holds the size too, so that
	// a source's add up from the index alone.
	//
	// And claims are dropped when released (session.Dropper): the
	// released claims' sessions earlier versions kept, one per source
	// ever served, go.
	{
		`ALTER TABLE inbox ADD COLUMN size INTEGER NOT NULL DEFAULT 0`,
		`UPDATE inbox SET size = length(CAST(parts AS BLOB)) WHERE state = 'pending'`,
		`DELETE FROM sessions WHERE substr(id, 1, 7) = '_claim.' AND lease_owner IS NULL AND last_seq = 0`,
		`DROP INDEX inbox_pending`,
		`CREATE INDEX inbox_pending ON inbox (tenant, source, seq, size) WHERE state = 'pending'`,
	},
	// Version 11: the outbox (session.Outbox), a row per message owed,
	// written by the commit of its event and deleted with its session;
	// times in microseconds. outbox_pending is what claims look through.
	{
		`CREATE TABLE outbox (
			id         INTEGER PRIMARY KEY AUTOINCREMENT,
			tenant     TEXT    NOT NULL,
			session_id TEXT    NOT NULL,
			seq        INTEGER NOT NULL,
			kind       TEXT    NOT NULL,
			source     TEXT    NOT NULL,
			state      TEXT    NOT NULL DEFAULT 'pending',
			attempts   INTEGER NOT NULL DEFAULT 0,
			due        INTEGER NOT NULL,
			owner      TEXT    NOT NULL DEFAULT '',
			until      INTEGER NOT NULL DEFAULT 0,
			ref        TEXT    NOT NULL DEFAULT '',
			error      TEXT    NOT NULL DEFAULT '',
			created    INTEGER NOT NULL
		)`,
		`CREATE INDEX outbox_pending ON outbox (tenant, session_id, id, due, owner, until) WHERE state = 'pending'`,
		`CREATE INDEX outbox_session ON outbox (tenant, session_id, id)`,
	},
	// Version 12: blobs (session.Blobs): the bytes of an image or a file,
	// kept once per tenant by their SHA-256 (hex); at in microseconds.
	{
		`CREATE TABLE blobs (
			tenant TEXT    NOT NULL,
			hash   TEXT    NOT NULL,
			type   TEXT    NOT NULL,
			size   INTEGER NOT NULL,
			at     INTEGER NOT NULL,
			data   BLOB    NOT NULL,
			UNIQUE (tenant, hash)
		)`,
	},
}

// fills[v] fills in, after migrations[v-1], what version v keeps that the
// versions before did not, from the rows they left: work in Go, in the
// migration's transaction. A fill reads the schema of version v, never a
// later one.
var fills = map[int]func(ctx context.Context, tx *sql.Tx) error{
	8: fillRequests,
}

// fillRequests fills the requests of version 8 from the logs of the
// sessions a run goes on in (running, waiting): only those have pending
// requests (a run that ends otherwise answers or withdraws its own).
func fillRequests(ctx context.Context, tx *sql.Tx) error {
	type sess struct {
		tenant, id string
		log        int64
	}
	var all []sess
	rows, err := tx.QueryContext(ctx, `SELECT tenant, id, log FROM sessions WHERE status IN ('running', 'waiting') AND log IS NOT NULL`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var s sess
		if err := rows.Scan(&s.tenant, &s.id, &s.log); err != nil {
			rows.Close()
			return err
		}
		all = append(all, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range all {
		evs, err := requestEvents(ctx, tx, s.id, s.log)
		if err != nil {
			return err
		}
		pending, err := reqindex.Pending(evs)
		if err != nil {
			return fmt.Errorf("session %q: %w", s.id, err)
		}
		for _, r := range pending {
			if _, err := tx.ExecContext(ctx, upsertRequest, requestArgs(s.tenant, s.id, r)...); err != nil {
				return fmt.Errorf("session %q: request %q: %w", s.id, r.RequestID, err)
			}
		}
	}
	return nil
}

// requestEvents reads the input_required and input_resolved events of
// the log numbered log, of session id, in order.
func requestEvents(ctx context.Context, tx *sql.Tx, id string, log int64) ([]*session.Event, error) {
	lo, hi := keyRange(log)
	rows, err := tx.QueryContext(ctx, `SELECT key, n, json FROM events WHERE key > ? AND key < ? ORDER BY key`, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out, row []*session.Event
	for rows.Next() {
		var (
			key, n int64
			raw    []byte
		)
		if err := rows.Scan(&key, &n, &raw); err != nil {
			return nil, err
		}
		if row, err = appendRow(row[:0], id, key, n, raw, 0); err != nil {
			return nil, err
		}
		for _, ev := range row {
			if ev.Type == session.TypeInputRequired || ev.Type == session.TypeInputResolved {
				out = append(out, ev)
			}
		}
	}
	return out, rows.Err()
}

// migrate brings the schema up to date in one write transaction, so that
// two processes opening a new file at once do not both create it.
// checkVersion checks, without writing, that the database has this
// build's schema (a store opened with ReadOnly cannot migrate it).
func checkVersion(ctx context.Context, db *sql.DB) error {
	var version int
	if err := db.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&version); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if version != len(migrations) {
		return fmt.Errorf("database schema is version %d, this build's is %d: open it once with write access to migrate it", version, len(migrations))
	}
	return nil
}

func migrate(ctx context.Context, db *sql.DB) error {
	return write(ctx, db, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
			version INTEGER NOT NULL
		)`); err != nil {
			return err
		}
		var version int
		switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&version); {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (id, version) VALUES (1, 0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("database schema is version %d, newer than this build's %d", version, len(migrations))
		}
		if version == len(migrations) {
			return nil
		}
		for v := version; v < len(migrations); v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
				}
			}
			if fill := fills[v+1]; fill != nil {
				if err := fill(ctx, tx); err != nil {
					return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
				}
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ? WHERE id = 1`, len(migrations))
		return err
	})
}
