package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// A stmt is one of the statements of the writer (see writeSQL).
type stmt int

const (
	sBegin stmt = iota
	sCommit
	sRollback
	sDataVersion
	sInsertSession
	sUpdateSession
	sStartLog
	sCheckLight
	sInsertRow
	sInsertEvents
	sBumpLog
	sLastSeq
	sUpsertSnapshot
	sDeleteSession
	sDeleteEvents
	sDeleteSnapshot
	sGetLease
	sGetSession
	sSetLease
	sRenewLease
	sReleaseLease
	sDropSession
	sRequestControl
	sInsertInput
	sInsertInputWithin
	sPendingSize
	sInputByKey
	sRefuseInputs
	sUnanswerable
	sAnswerInputs
	sUpsertRequest
	sDeleteRequests
	sDeleteSessionRequests
	sSessionExists
	sInsertRecord
	sUpsertRecord
	sUpdateRecord
	sRecordVersion
	sDeleteRecord
	sDeleteSessionRecords
	sInsertOutbox
	sClaimOutbox
	sSettleOutbox
	sOutboxDue
	sDeleteSessionOutbox
	sInsertBlob
	sBlobOf
	numStmts
)

// writeSQL are the statements of the writer, prepared on its connection
// (see wtx).
var writeSQL = [numStmts]string{
	sBegin:       `BEGIN IMMEDIATE`,
	sCommit:      `COMMIT`,
	sRollback:    `ROLLBACK`,
	sDataVersion: `PRAGMA data_version`,
	sInsertSession: `INSERT INTO sessions (` + sessionColumns + `, lease_owner, lease_token, lease_expires)
		VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, id) DO NOTHING`,
	sUpdateSession: `UPDATE sessions AS s SET status = ?, turn = ?, usage = CAST(? AS TEXT), last_seq = ?, updated_at = ?,
		` + releaseSet + `
		WHERE s.tenant = ? AND s.id = ? AND ` + headSeq + ` = ? AND ` + fenceCheck,
	// updateSession, giving the session a log number.
	sStartLog: `UPDATE sessions AS s SET status = ?, turn = ?, usage = CAST(? AS TEXT), last_seq = ?, updated_at = ?,
		` + releaseSet + `,
		log = coalesce(log, (SELECT next FROM logs WHERE id = 1))
		WHERE s.tenant = ? AND s.id = ? AND ` + headSeq + ` = ? AND ` + fenceCheck,
	// The log number of a session that is at the expected seq, keeps its
	// status and turn, and does not fence the commit off (no row
	// otherwise): the session's tenant and id, status and turn, the
	// fence's three parameters and the expected seq. (An INSERT … SELECT
	// that read the events it inserts into would go through a temporary
	// table.)
	sCheckLight: `SELECT s.log FROM sessions s
		WHERE s.tenant = ? AND s.id = ? AND s.log IS NOT NULL AND s.status = ? AND s.turn = ? AND ` + fenceCheck + `
			AND ` + lastRow + ` = (s.log << 32) | ?`,
	// A row of events, its key given.
	sInsertRow: `INSERT INTO events (key, n, json, usage, time) VALUES (?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ?)`,
	// A row of a session's events: its last seq, how many, the events as
	// text, the session's usage and the commit's time; then the session's
	// tenant and id. The log number comes from the session's row, in the
	// same statement; a session without one inserts nothing (rather than
	// letting a NULL key pick a rowid).
	sInsertEvents: `INSERT INTO events (key, n, json, usage, time)
		SELECT (log << 32) | ?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ? FROM sessions WHERE tenant = ? AND id = ? AND log IS NOT NULL`,
	sBumpLog: `UPDATE logs SET next = next + 1 WHERE id = 1`,
	sLastSeq: `SELECT ` + headSeq + ` FROM sessions s WHERE s.tenant = ? AND s.id = ?`,
	sUpsertSnapshot: `INSERT INTO snapshots (tenant, session_id, seq, data) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, session_id) DO UPDATE SET seq = excluded.seq, data = excluded.data`,
	sDeleteSession:  `DELETE FROM sessions WHERE tenant = ? AND id = ? RETURNING log`,
	sDeleteEvents:   `DELETE FROM events WHERE key >= ? AND key < ?`,
	sDeleteSnapshot: `DELETE FROM snapshots WHERE tenant = ? AND session_id = ?`,
	sGetLease:       `SELECT lease_owner, lease_token, lease_expires FROM sessions WHERE tenant = ? AND id = ?`,
	sSetLease:       `UPDATE sessions SET lease_owner = ?, lease_token = ?, lease_expires = ? WHERE tenant = ? AND id = ?`,
	sGetSession:     `SELECT ` + selectColumns + withLastRow("sessions") + ` WHERE s.tenant = ? AND s.id = ?`,
	sRenewLease: `UPDATE sessions SET lease_expires = ?
		WHERE tenant = ? AND id = ? AND lease_token = ? AND lease_owner = ?`,
	sReleaseLease: `UPDATE sessions SET lease_owner = NULL, lease_expires = 0, control = NULL
		WHERE tenant = ? AND id = ? AND lease_token = ? AND lease_owner = ?`,
	// A session of no events, whose lease the tenant, id, token and
	// owner are (session.Dropper).
	sDropSession: `DELETE FROM sessions WHERE tenant = ? AND id = ? AND lease_token = ? AND lease_owner = ? AND last_seq = 0`,
	sRequestControl: `UPDATE sessions SET control = ?
		WHERE tenant = ? AND id = ? AND lease_owner = ? AND lease_token = ?
		AND (? OR control IS NULL OR json_extract(control, '$.kind') = 'steer')`,
	// An input, unless its id or its key is taken (then no row).
	sInsertInput: `INSERT INTO inbox (tenant, id, source, session_id, parts, metadata, key, digest, at, size, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending') ON CONFLICT DO NOTHING RETURNING seq`,
	// An input, as sInsertInput, if its source has room: fewer pending
	// inputs than ?11 and their size and its own (?10) at most ?12
	// (either bound zero: none), counted in the insert's own write, off
	// inbox_pending, which holds the sizes.
	sInsertInputWithin: `INSERT INTO inbox (tenant, id, source, session_id, parts, metadata, key, digest, at, size, state)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending'
		FROM (SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM inbox INDEXED BY inbox_pending
			WHERE tenant = ?1 AND source = ?3 AND state = 'pending') p
		WHERE (?11 <= 0 OR p.n < ?11) AND (?12 <= 0 OR p.bytes + ?10 <= ?12)
		ON CONFLICT DO NOTHING RETURNING seq`,
	// A source's pending inputs and their size: the tenant, the source.
	sPendingSize: `SELECT count(*), coalesce(sum(size), 0) FROM inbox INDEXED BY inbox_pending WHERE tenant = ? AND source = ? AND state = 'pending'`,
	// The input of a tenant, source and key (the key's condition lets
	// SQLite use the partial index inbox_key).
	sInputByKey: `SELECT ` + inputColumns + ` FROM inbox WHERE tenant = ? AND source = ? AND key = ? AND key != ''`,
	// The inputs of ids, a JSON array, are refused with a reason, or
	// answered by a run, if pending: the reason or run, the tenant, ids.
	sRefuseInputs: `UPDATE inbox SET state = 'refused', reason = ?
		WHERE tenant = ? AND id IN (SELECT value FROM json_each(?)) AND state = 'pending'`,
	sAnswerInputs: `UPDATE inbox SET state = 'answered', run_id = ?
		WHERE tenant = ? AND id IN (SELECT value FROM json_each(?)) AND state = 'pending'`,
	// The first of ids, a JSON array, that is not a pending input of the
	// tenant, and its state ('' for none): no row if all are pending.
	sUnanswerable: `SELECT j.value, coalesce(i.state, '') FROM json_each(?) j
		LEFT JOIN inbox i ON i.tenant = ? AND i.id = j.value
		WHERE i.state IS NOT 'pending' LIMIT 1`,
	sUpsertRequest: upsertRequest,
	// The requests of a session that ids, a JSON array, name.
	sDeleteRequests:        `DELETE FROM requests WHERE tenant = ? AND session_id = ? AND request_id IN (SELECT value FROM json_each(?))`,
	sDeleteSessionRequests: `DELETE FROM requests WHERE tenant = ? AND session_id = ?`,
	sSessionExists:         `SELECT 1 FROM sessions WHERE tenant = ? AND id = ?`,
	// A record: tenant, session, kind, key, id, data; created (no row if
	// it exists), created or replaced, or replaced at a version (no row
	// if it is at another).
	sInsertRecord: `INSERT INTO records (tenant, session_id, kind, key, id, data, version) VALUES (?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT DO NOTHING RETURNING version`,
	sUpsertRecord: `INSERT INTO records (tenant, session_id, kind, key, id, data, version) VALUES (?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT DO UPDATE SET data = excluded.data, version = version + 1 RETURNING version`,
	sUpdateRecord: `UPDATE records SET data = ?, version = version + 1
		WHERE tenant = ? AND session_id = ? AND kind = ? AND key = ? AND id = ? AND version = ? RETURNING version`,
	sRecordVersion:        `SELECT version FROM records WHERE tenant = ? AND session_id = ? AND kind = ? AND key = ? AND id = ?`,
	sDeleteRecord:         `DELETE FROM records WHERE tenant = ? AND session_id = ? AND kind = ? AND key = ? AND id = ?`,
	sDeleteSessionRecords: `DELETE FROM records WHERE tenant = ? AND session_id = ?`,
	// A message owed: tenant, session, seq, kind, source, due and created.
	sInsertOutbox: `INSERT INTO outbox (tenant, session_id, seq, kind, source, due, created) VALUES (?, ?, ?, ?, ?, ?, ?)`,
	// Claims for owner ?1 until ?2 the items that are their session's
	// oldest pending one, due at ?3 and whose claim has lapsed, oldest
	// first, at most ?4 (negative: all).
	sClaimOutbox: `UPDATE outbox SET owner = ?1, until = ?2, attempts = attempts + 1
		WHERE id IN (SELECT o.id FROM outbox o
			WHERE o.state = 'pending' AND o.due <= ?3 AND (o.owner = '' OR o.until <= ?3)
			AND NOT EXISTS (SELECT 1 FROM outbox p INDEXED BY outbox_pending
				WHERE p.tenant = o.tenant AND p.session_id = o.session_id AND p.state = 'pending' AND p.id < o.id)
			ORDER BY o.id LIMIT ?4 + 0)
		RETURNING ` + outboxColumns,
	// Settles item ?5 of owner ?6: state, ref, error, due.
	sSettleOutbox: `UPDATE outbox SET state = ?, ref = ?, error = ?, due = ?, owner = '', until = 0
		WHERE id = ? AND owner = ? AND state = 'pending'`,
	sOutboxDue:           `SELECT due FROM outbox WHERE id = ?`,
	sDeleteSessionOutbox: `DELETE FROM outbox WHERE tenant = ? AND session_id = ?`,
	// A blob, unless the tenant keeps it: tenant, hash, type, size, at, data.
	sInsertBlob: `INSERT INTO blobs (tenant, hash, type, size, at, data) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, hash) DO NOTHING`,
	// What the tenant keeps of a blob: tenant, hash.
	sBlobOf: `SELECT type, size, at FROM blobs WHERE tenant = ? AND hash = ?`,
}

// A wtx is the writer's transaction: the driver's connection, which the
// writer holds for a batch, with the writer's statements prepared on it.
// The writer goes to the driver rather than through database/sql, whose
// locks, conversion of arguments and Stmt per statement of a Tx cost
// about as much as a small statement itself, paid while every other
// write waits. A wtx is used by one goroutine at a time.
type wtx struct {
	conn  driver.Conn
	stmts [numStmts]driver.Stmt
	args  []driver.NamedValue // reused by each statement
	row   []driver.Value
	inTx  bool // between a BEGIN and its COMMIT or ROLLBACK
}

// prepare prepares the writer's statements on conn. Those of a
// connection before are dropped, not closed: database/sql replaces a
// connection it has closed (after a write panicked, say), and a statement
// of a closed connection cannot be closed.
func (t *wtx) prepare(conn driver.Conn) error {
	*t = wtx{args: t.args, row: t.row}
	pc, ok := conn.(driver.ConnPrepareContext)
	if !ok {
		return errors.New("the driver's connection cannot prepare statements with a context")
	}
	for i, q := range writeSQL {
		s, err := pc.PrepareContext(context.Background(), q)
		if err != nil {
			t.close()
			return fmt.Errorf("preparing %q: %w", q, err)
		}
		t.stmts[i] = s
	}
	t.conn = conn
	return nil
}

// close closes the statements.
func (t *wtx) close() error {
	var errs []error
	for i, s := range t.stmts {
		if s != nil {
			errs = append(errs, s.Close())
			t.stmts[i] = nil
		}
	}
	t.conn = nil
	return errors.Join(errs...)
}

// bind sets t.args from args: int64, int, bool (as 0 or 1), string,
// []byte, float64 or nil.
func (t *wtx) bind(args []any) error {
	t.args = t.args[:0]
	for i, a := range args {
		var v driver.Value
		switch x := a.(type) {
		case nil, int64, string, []byte, float64:
			v = x
		case int:
			v = int64(x)
		case bool:
			v = int64(0)
			if x {
				v = int64(1)
			}
		default:
			return fmt.Errorf("argument %d: unsupported type %T", i+1, a)
		}
		t.args = append(t.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return nil
}

// exec runs statement s with args and returns how many rows it changed.
// A write runs to its end: its context is never canceled (see
// writer.write).
func (t *wtx) exec(s stmt, args ...any) (int64, error) {
	if err := t.bind(args); err != nil {
		return 0, err
	}
	res, err := t.stmts[s].(driver.StmtExecContext).ExecContext(context.Background(), t.args)
	switch {
	case s == sBegin:
		t.inTx = err == nil
	case s == sCommit && err == nil, s == sRollback:
		t.inTx = false
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queryRow runs query s with args and scans its first row into dest,
// which are *int64, *int, *string, *[]byte (nil for NULL) or sql.Scanners;
// sql.ErrNoRows if it has none.
func (t *wtx) queryRow(s stmt, args []any, dest ...any) error {
	if err := t.bind(args); err != nil {
		return err
	}
	rows, err := t.stmts[s].(driver.StmtQueryContext).QueryContext(context.Background(), t.args)
	if err != nil {
		return err
	}
	defer rows.Close()
	t.row = append(t.row[:0], make([]driver.Value, len(rows.Columns()))...)
	if err := rows.Next(t.row); err != nil {
		if errors.Is(err, io.EOF) {
			return sql.ErrNoRows
		}
		return err
	}
	if len(dest) != len(t.row) {
		return fmt.Errorf("%d columns, %d destinations", len(t.row), len(dest))
	}
	for i, d := range dest {
		var err error
		switch d := d.(type) {
		case *int64:
			v, ok := t.row[i].(int64)
			if !ok {
				err = fmt.Errorf("column %d is %T, not an integer", i+1, t.row[i])
			}
			*d = v
		case *int:
			v, ok := t.row[i].(int64)
			if !ok {
				err = fmt.Errorf("column %d is %T, not an integer", i+1, t.row[i])
			}
			*d = int(v)
		case *string:
			switch v := t.row[i].(type) {
			case string:
				*d = v
			case []byte:
				*d = string(v)
			default:
				err = fmt.Errorf("column %d is %T, not text", i+1, t.row[i])
			}
		case *[]byte:
			switch v := t.row[i].(type) {
			case nil:
				*d = nil
			case string:
				*d = []byte(v)
			case []byte:
				*d = bytes.Clone(v)
			default:
				err = fmt.Errorf("column %d is %T, not text", i+1, t.row[i])
			}
		case sql.Scanner:
			err = d.Scan(t.row[i])
		default:
			err = fmt.Errorf("destination %d: unsupported type %T", i+1, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// queryRows runs query s with args and calls each with every row's
// values, which are the driver's and valid only during the call.
func (t *wtx) queryRows(s stmt, args []any, each func(row []driver.Value) error) error {
	if err := t.bind(args); err != nil {
		return err
	}
	rows, err := t.stmts[s].(driver.StmtQueryContext).QueryContext(context.Background(), t.args)
	if err != nil {
		return err
	}
	defer rows.Close()
	t.row = append(t.row[:0], make([]driver.Value, len(rows.Columns()))...)
	for {
		switch err := rows.Next(t.row); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		if err := each(t.row); err != nil {
			return err
		}
	}
}

// A wrow is a query's row, scanned by queryRow.
type wrow struct {
	t    *wtx
	s    stmt
	args []any
}

func (r wrow) Scan(dest ...any) error { return r.t.queryRow(r.s, r.args, dest...) }

// execSQL runs query, not prepared, with args. For tests.
func (t *wtx) execSQL(query string, args ...any) error {
	if err := t.bind(args); err != nil {
		return err
	}
	ex, ok := t.conn.(driver.ExecerContext)
	if !ok {
		return errors.New("the driver's connection cannot execute")
	}
	_, err := ex.ExecContext(context.Background(), query, t.args)
	return err
}
