package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/follow"
)

// Commit appends c.Events, updates the session row and replaces the
// snapshot if c.Snapshot is set, in one transaction. A zero c.Time means
// now.
//
// The events are encoded before the transaction begins, in rows of
// events (one, unless the commit is large). A commit that keeps the
// session's status and turn, does not release its lease and answers no
// input (most commits of a run) inserts its row only, with the seq and
// fence checks in the INSERT; the others update the session's row, whose
// WHERE is the checks, then insert their rows. A commit with Answers
// first finds every input it names pending (else it is refused, having
// written nothing), then marks them answered once the session's row is
// updated. The requests its events ask and answer go to the requests
// table (session.RequestIndex) once its events are written. All
// statements are prepared by Open.
func (st *Store) Commit(ctx context.Context, c *session.Commit) error {
	last := c.ExpectSeq + int64(len(c.Events))
	if err := c.Check(); err != nil {
		return fmt.Errorf("sqlite: commit to session %q: %w", c.SessionID, err)
	}
	if last > maxSeq {
		return fmt.Errorf("sqlite: commit to session %q: seq %d is past this store's limit %d", c.SessionID, last, int64(maxSeq))
	}
	enc := encoders.Get().(*encoder)
	defer enc.release() // once the write is done with the rows
	rows, err := enc.encodeRows(c.Events)
	if err != nil {
		return fmt.Errorf("sqlite: commit to session %q: %w", c.SessionID, err)
	}
	usage, err := json.Marshal(c.Usage)
	if err != nil {
		return fmt.Errorf("sqlite: commit to session %q: %w", c.SessionID, err)
	}
	requests, err := changesOf(c)
	if err != nil {
		return fmt.Errorf("sqlite: commit to session %q: %w", c.SessionID, err)
	}
	now := c.Time
	if now.IsZero() {
		now = time.Now()
	}

	tenant := session.TenantOf(ctx)
	release := c.Release && c.Fence != 0
	err = st.write(ctx, func(ctx context.Context, tx *wtx) error {
		// Most commits of a run keep the session's status and turn: their
		// row of events is all they write, if the session is as
		// expected. The others, and a light one that inserted nothing
		// (refused: the UPDATE says why), update the session's row.
		first := c.ExpectSeq == 0 && len(c.Events) > 0
		k := headKey{tenant, c.SessionID}
		if !first && !release && len(rows) == 1 && len(c.Answers) == 0 {
			// The checks: from what the writer knows of the session if it
			// wrote its last commit (a fenced one), else from the database.
			h, ok := st.g.heads[k]
			ok = ok && c.Fence != 0 && h.fence == c.Fence && h.seq == c.ExpectSeq && h.status == string(c.Status) && h.turn == c.Turn
			if !ok {
				err := tx.queryRow(sCheckLight, []any{tenant, c.SessionID, string(c.Status), c.Turn,
					c.Fence, c.Fence, st.now().UnixMicro(), c.ExpectSeq}, &h.log)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				ok = err == nil
			}
			if ok {
				r := rows[0]
				if _, err := tx.exec(sInsertRow, h.log<<32|r.last, r.n, r.json, usage, now.UnixMicro()); err != nil {
					return fmt.Errorf("events %d to %d: %w", r.last-int64(r.n)+1, r.last, err)
				}
				if err := st.saveSnapshot(tx, tenant, c); err != nil {
					return err
				}
				if err := requests.write(tx, tenant, c.SessionID); err != nil {
					return err
				}
				if err := insertOutbox(tx, tenant, c, now); err != nil {
					return err
				}
				if c.Fence != 0 {
					st.g.remember(k, head{log: h.log, seq: last, status: string(c.Status), turn: c.Turn, fence: c.Fence})
				} else {
					// Unfenced (no live lease): a fenced writer's entry
					// no longer holds the session's seq.
					delete(st.g.heads, k)
				}
				return nil
			}
		}
		delete(st.g.heads, k) // the session's row changes, or the commit is refused
		var answers string    // c.Answers as a JSON array
		if len(c.Answers) > 0 {
			b, err := json.Marshal(c.Answers)
			if err != nil {
				return err
			}
			answers = string(b)
			// Before anything is written: a refusal changes nothing.
			if err := st.unanswerable(tx, tenant, c, answers); err != nil {
				return err
			}
		}
		// The first events of a session give it its log number.
		update := sUpdateSession
		if first {
			update = sStartLog
		}
		n, err := tx.exec(update,
			string(c.Status), c.Turn, usage, last, now.UnixMicro(), release, release, release, tenant, c.SessionID, c.ExpectSeq,
			c.Fence, c.Fence, st.now().UnixMicro())
		if err != nil {
			return err
		} else if n == 0 {
			return refuseKnown(st.commitRefused(tx, tenant, c))
		}
		if len(c.Answers) > 0 {
			if err := answerInputs(tx, tenant, c, answers); err != nil {
				return err
			}
		}
		if first {
			if _, err := tx.exec(sBumpLog); err != nil {
				return err
			}
		}
		if err := st.insertEventRows(tx, tenant, c.SessionID, rows, usage, now); err != nil {
			return err
		}
		if err := requests.write(tx, tenant, c.SessionID); err != nil {
			return err
		}
		if err := insertOutbox(tx, tenant, c, now); err != nil {
			return err
		}
		return st.saveSnapshot(tx, tenant, c)
	})
	if err != nil {
		return fmt.Errorf("sqlite: commit to session %q: %w", c.SessionID, err)
	}
	if len(c.Events) > 0 && st.waiters.Any() {
		st.waiters.Committed(tenant, c.SessionID, c.Events)
	}
	return nil
}

// saveSnapshot stores c's snapshot, if it has one, in tx.
func (st *Store) saveSnapshot(tx *wtx, tenant string, c *session.Commit) error {
	if c.Snapshot == nil {
		return nil
	}
	if _, err := tx.exec(sUpsertSnapshot, tenant, c.SessionID, c.Snapshot.Seq, []byte(c.Snapshot.Data)); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// releaseSet is the part of a commit's SET that applies Commit.Release
// (a released lease takes its control request with it); its parameter is
// whether to release, three times.
const releaseSet = `lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END, lease_expires = CASE WHEN ? THEN 0 ELSE lease_expires END,
	control = CASE WHEN ? THEN NULL ELSE control END`

// fenceCheck is the part of a commit's WHERE that applies session.Leaser's
// fencing; its parameters are the commit's fence token, twice, and the
// lease clock's time.
const fenceCheck = `(CASE WHEN ? != 0 THEN lease_token = ? ELSE (lease_owner IS NULL OR lease_expires <= ?) END)`

// An eventRow is the events of a row of the events table: the seq of the
// last, how many, and their JSON, a line each.
type eventRow struct {
	last int64
	n    int
	json []byte
}

// encoders are the buffers Commit encodes events into, kept for the
// next: a commit's events are a few KB, and a buffer grown anew for each
// was most of what a commit allocated.
var encoders = sync.Pool{New: func() any { return new(encoder) }}

// An encoder encodes events as JSON lines into buf.
type encoder struct{ buf []byte }

// maxPooled is the largest buffer kept for the next commit.
const maxPooled = 1 << 20

// encodeRows encodes evs (session.Event.AppendJSON) into rows of at most
// maxRowEvents events and about maxRowBytes each, an event a line. The
// rows' JSON is e's until e is reused.
func (e *encoder) encodeRows(evs []*session.Event) ([]eventRow, error) {
	e.buf = e.buf[:0]
	var (
		rows  []eventRow
		n     int
		start int // of the row being encoded, in buf
		err   error
	)
	for i, ev := range evs {
		if n > 0 {
			e.buf = append(e.buf, '\n')
		}
		if e.buf, err = ev.AppendJSON(e.buf); err != nil {
			return nil, fmt.Errorf("encoding event %d: %w", ev.Seq, err)
		}
		n++
		if n == maxRowEvents || len(e.buf)-start >= maxRowBytes || i == len(evs)-1 {
			// A slice taken before the buffer grows keeps its bytes: the
			// array it points into is left as it was.
			rows = append(rows, eventRow{last: ev.Seq, n: n, json: e.buf[start:len(e.buf):len(e.buf)]})
			start, n = len(e.buf), 0
		}
	}
	return rows, nil
}

// release gives e back for another commit.
func (e *encoder) release() {
	if cap(e.buf) <= maxPooled {
		encoders.Put(e)
	}
}

// insertEventRows inserts a session's rows, with the session's usage and
// the commit's time.
func (st *Store) insertEventRows(tx *wtx, tenant, id string, rows []eventRow, usage []byte, now time.Time) error {
	for _, r := range rows {
		m, err := tx.exec(sInsertEvents, r.last, r.n, r.json, usage, now.UnixMicro(), tenant, id)
		if err != nil {
			return fmt.Errorf("events %d to %d: %w", r.last-int64(r.n)+1, r.last, err)
		} else if m != 1 {
			return fmt.Errorf("events %d to %d: %d rows inserted: the session has no log number", r.last-int64(r.n)+1, r.last, m)
		}
	}
	return nil
}

// commitRefused explains why the UPDATE of a commit matched no row: the
// session is gone, its last seq is not c.ExpectSeq, or the commit is
// fenced off. It always returns an error.
func (st *Store) commitRefused(tx *wtx, tenant string, c *session.Commit) error {
	last, err := st.sessionRefusal(tx, tenant, c)
	if err == nil {
		err = fmt.Errorf("expected seq %d, session is at %d: %w", c.ExpectSeq, last, session.ErrConflict)
	}
	return err
}

// sessionRefusal is why the session refuses c — gone, fenced off, at
// another seq than c.ExpectSeq — or nil if it takes it; and the session's
// last seq.
func (st *Store) sessionRefusal(tx *wtx, tenant string, c *session.Commit) (last int64, err error) {
	err = tx.queryRow(sLastSeq, []any{tenant, c.SessionID}, &last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, session.ErrNotFound
	case err != nil:
		return 0, err
	}
	// The fence first: a writer that lost the session must hear so, not
	// that it should reload and try again.
	l, err := st.lease(tx, tenant, c.SessionID)
	if err != nil {
		return last, err
	}
	switch {
	case c.Fence != 0 && c.Fence != l.Token:
		return last, fmt.Errorf("fence token %d, session's is %d: %w", c.Fence, l.Token, session.ErrFenced)
	case c.Fence == 0 && l.Owner != "" && st.now().Before(l.Expires):
		return last, fmt.Errorf("no fence token, and %s holds a live lease: %w", l.Owner, session.ErrFenced)
	case last != c.ExpectSeq:
		return last, fmt.Errorf("expected seq %d, session is at %d: %w", c.ExpectSeq, last, session.ErrConflict)
	}
	return last, nil
}

// lease reads a session's lease in tx; Owner is empty when none is held.
func (st *Store) lease(tx *wtx, tenant, id string) (session.Lease, error) {
	var (
		owner   sql.NullString
		l       = session.Lease{SessionID: id}
		expires int64
	)
	err := tx.queryRow(sGetLease, []any{tenant, id}, &owner, &l.Token, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return l, session.ErrNotFound
	}
	if err != nil {
		return l, err
	}
	if owner.Valid {
		l.Owner, l.Expires = owner.String, time.UnixMicro(expires).UTC()
	}
	return l, nil
}

// Acquire gives owner the session's lease. See session.Leaser.
func (st *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	if owner == "" || ttl <= 0 {
		return session.Lease{}, fmt.Errorf("sqlite: acquire %q: need an owner and a positive ttl", id)
	}
	var out session.Lease
	tenant := session.TenantOf(ctx)
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		delete(st.g.heads, headKey{tenant, id})
		l, err := st.lease(tx, tenant, id)
		if err != nil {
			return refuseKnown(err)
		}
		l, err = l.Take(owner, st.now(), ttl)
		if err != nil {
			return refuseKnown(err)
		}
		if _, err := tx.exec(sSetLease, l.Owner, l.Token, l.Expires.UnixMicro(), tenant, id); err != nil {
			return err
		}
		out = l
		return nil
	})
	if err != nil {
		return session.Lease{}, fmt.Errorf("sqlite: acquire %q: %w", id, err)
	}
	return out, nil
}

// Renew extends l. See session.Leaser.
func (st *Store) Renew(ctx context.Context, l session.Lease, ttl time.Duration) (session.Lease, error) {
	l.Expires = st.now().Add(ttl).Truncate(time.Microsecond)
	tenant := session.TenantOf(ctx)
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		delete(st.g.heads, headKey{tenant, l.SessionID})
		return st.leaseUpdate(tx, tenant, l, sRenewLease, l.Expires.UnixMicro(), tenant, l.SessionID, l.Token, l.Owner)
	})
	if err != nil {
		return session.Lease{}, fmt.Errorf("sqlite: renew lease of %q: %w", l.SessionID, err)
	}
	return l, nil
}

// Release ends l. See session.Leaser.
func (st *Store) Release(ctx context.Context, l session.Lease) error {
	tenant := session.TenantOf(ctx)
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		delete(st.g.heads, headKey{tenant, l.SessionID})
		return st.leaseUpdate(tx, tenant, l, sReleaseLease, tenant, l.SessionID, l.Token, l.Owner)
	})
	if err != nil {
		return fmt.Errorf("sqlite: release lease of %q: %w", l.SessionID, err)
	}
	return nil
}

// Drop deletes the session whose lease l is. See session.Dropper.
func (st *Store) Drop(ctx context.Context, l session.Lease) error {
	tenant := session.TenantOf(ctx)
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		delete(st.g.heads, headKey{tenant, l.SessionID})
		n, err := tx.exec(sDropSession, tenant, l.SessionID, l.Token, l.Owner)
		if err != nil || n == 1 {
			return err
		}
		// It deleted nothing: say why.
		cur, err := st.lease(tx, tenant, l.SessionID)
		switch {
		case err != nil:
			return refuseKnown(err)
		case cur.Token != l.Token || cur.Owner != l.Owner:
			return refuse(fmt.Errorf("token %d of %s, session's is %d of %s: %w", l.Token, l.Owner, cur.Token, cur.Owner, session.ErrFenced))
		}
		return refuse(fmt.Errorf("it holds events: %w", session.ErrConflict))
	})
	if err != nil {
		return fmt.Errorf("sqlite: drop %q: %w", l.SessionID, err)
	}
	if st.waiters.Any() {
		st.waiters.Wake(tenant, l.SessionID)
	}
	return nil
}

// leaseUpdate runs a renewal or release, which matches no row when l is
// not the session's lease.
func (st *Store) leaseUpdate(tx *wtx, tenant string, l session.Lease, s stmt, args ...any) error {
	if n, err := tx.exec(s, args...); err != nil {
		return err
	} else if n == 1 {
		return nil
	}
	// The UPDATE changed nothing.
	cur, err := st.lease(tx, tenant, l.SessionID)
	if err != nil {
		return refuseKnown(err)
	}
	return refuse(fmt.Errorf("token %d of %s, session's is %d of %s: %w", l.Token, l.Owner, cur.Token, cur.Owner, session.ErrFenced))
}

// Follow yields the session's events after after, then each new one as it
// is committed, until ctx ends. A commit through this Store hands it its
// events, without a read; the commits of other processes are found by
// the data_version of the writer's connection, read at its next write or
// within the poll interval (see WithPollInterval), and then read from
// the log. A read-only store polls the log itself. See session.Follower.
func (st *Store) Follow(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	poll := time.Duration(0)
	if st.readOnly {
		poll = st.poll
	}
	return follow.Loop(ctx, &st.waiters, session.TenantOf(ctx), id, after, poll, func(after int64) iter.Seq2[*session.Event, error] {
		return st.Events(ctx, id, after)
	})
}

// LoadSnapshot returns the session's latest snapshot, or nil if it has
// none.
func (st *Store) LoadSnapshot(ctx context.Context, id string) (*session.Snapshot, error) {
	var (
		seq  sql.NullInt64
		data []byte
	)
	err := st.loadSnapshot.QueryRowContext(ctx, session.TenantOf(ctx), id).Scan(&seq, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, notFound("load snapshot of", id)
	case err != nil:
		return nil, fmt.Errorf("sqlite: load snapshot of %q: %w", id, err)
	case !seq.Valid:
		return nil, nil // the session exists; it has no snapshot
	}
	return &session.Snapshot{Seq: seq.Int64, Data: data}, nil
}

// Events yields the session's events with seq > after, in order. It reads
// them pageSize at a time and holds no connection while it yields; each
// page sees the log as of its own query, so events committed during the
// iteration may be included.
//
// An error ends the sequence: ErrNotFound for an unknown session, the
// context's error, a database error, or a row that does not decode (the
// error names the session and seq).
func (st *Store) Events(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		var log sql.NullInt64
		err := st.logOf.QueryRowContext(ctx, session.TenantOf(ctx), id).Scan(&log)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			yield(nil, notFound("events of", id))
			return
		case err != nil:
			yield(nil, fmt.Errorf("sqlite: events of %q: %w", id, err))
			return
		case !log.Valid:
			return // no events yet
		}
		lo, hi := keyRange(log.Int64)
		after = min(max(after, 0), maxSeq)
		from := lo | after
		var page []*session.Event
		for {
			var rows int
			page, rows, err = st.readPage(ctx, id, from, hi, after, page[:0])
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ev := range page {
				if !yield(ev, nil) {
					return
				}
			}
			if rows < pageSize {
				return
			}
			from = lo | page[len(page)-1].Seq
		}
	}
}

// readPage appends to page the events after seq after of the first
// pageSize rows of session id with keys in (from, hi), and returns how
// many rows it read.
func (st *Store) readPage(ctx context.Context, id string, from, hi, after int64, page []*session.Event) ([]*session.Event, int, error) {
	rows, err := st.eventsPage.QueryContext(ctx, from, hi, pageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: events of %q: %w", id, err)
	}
	defer rows.Close()
	read := 0
	for rows.Next() {
		var (
			key int64
			n   int64
			raw sql.RawBytes
		)
		if err := rows.Scan(&key, &n, &raw); err != nil {
			return nil, 0, fmt.Errorf("sqlite: events of %q: %w", id, err)
		}
		read++
		if page, err = appendRow(page, id, key, n, raw, after); err != nil {
			return nil, 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlite: events of %q: %w", id, err)
	}
	return page, read, nil
}

// appendRow appends to page the events after seq after of a row of
// session id's events: its lines, seqs last-n+1 to last, where last is
// key's seq.
func appendRow(page []*session.Event, id string, key, n int64, raw []byte, after int64) ([]*session.Event, error) {
	last := key & maxSeq
	seq := last - n + 1
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if seq > last {
			return nil, fmt.Errorf("sqlite: session %q events %d to %d: corrupt row: more than %d lines", id, last-n+1, last, n)
		}
		if seq > after {
			ev := new(session.Event)
			if err := json.Unmarshal(line, ev); err != nil {
				return nil, fmt.Errorf("sqlite: session %q event %d: undecodable row: %w", id, seq, err)
			}
			if ev.Seq != seq {
				return nil, fmt.Errorf("sqlite: session %q event %d: corrupt row: it holds seq %d", id, seq, ev.Seq)
			}
			page = append(page, ev)
		}
		seq++
	}
	if seq != last+1 {
		return nil, fmt.Errorf("sqlite: session %q events %d to %d: corrupt row: %d lines", id, last-n+1, last, seq-(last-n+1))
	}
	return page, nil
}

// RequestControl keeps c for the owner of l. See session.Controller.
func (st *Store) RequestControl(ctx context.Context, id string, l session.Lease, c session.Control) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("sqlite: request control of %q: %w", id, err)
	}
	tenant := session.TenantOf(ctx)
	err = st.write(ctx, func(ctx context.Context, tx *wtx) error {
		n, err := tx.exec(sRequestControl, string(b), tenant, id, l.Owner, l.Token, c.Kind != session.ControlSteer)
		if err != nil || n == 1 {
			return err
		}
		cur, err := st.lease(tx, tenant, id)
		if err != nil {
			return refuseKnown(err)
		}
		if cur.Owner == l.Owner && cur.Token == l.Token {
			return nil // a steering, with a stop kept: the stop stays
		}
		return refuse(fmt.Errorf("its lease is %s's (token %d), not %s's (token %d): %w", cmpOr(cur.Owner, "nobody"), cur.Token, l.Owner, l.Token, session.ErrFenced))
	})
	if err != nil {
		return fmt.Errorf("sqlite: request control of %q: %w", id, err)
	}
	return nil
}

// Controls returns the control requests kept for owner. See
// session.Controller.
func (st *Store) Controls(ctx context.Context, owner string) ([]session.SessionControl, error) {
	rows, err := st.query(ctx, `SELECT tenant, id, control FROM sessions INDEXED BY sessions_control
		WHERE control IS NOT NULL AND lease_owner = ?`, owner)
	if err != nil {
		return nil, fmt.Errorf("sqlite: controls of %q: %w", owner, err)
	}
	defer rows.Close()
	var out []session.SessionControl
	for rows.Next() {
		var (
			sc  session.SessionControl
			raw []byte
		)
		if err := rows.Scan(&sc.Tenant, &sc.SessionID, &raw); err != nil {
			return nil, fmt.Errorf("sqlite: controls of %q: %w", owner, err)
		}
		if err := json.Unmarshal(raw, &sc.Control); err != nil {
			return nil, fmt.Errorf("sqlite: session %q: corrupt control request: %w", sc.SessionID, err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: controls of %q: %w", owner, err)
	}
	return out, nil
}
