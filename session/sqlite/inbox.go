package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/inputjson"
)

var _ session.Inbox = (*Store)(nil)

// inputColumns are the columns an input is read from (see inputRow).
const inputColumns = `seq, tenant, id, source, session_id, parts, metadata, key, digest, at, state, run_id, reason`

// inputRow is an input as the inbox table holds it.
type inputRow struct {
	in              session.InboxInput
	parts, metadata []byte // JSON; metadata nil when empty
	at              int64
	state           string
}

// dests are the scan destinations of inputColumns, for database/sql and
// for the writer's queryRow alike.
func (r *inputRow) dests() []any {
	return []any{&r.in.Seq, &r.in.Tenant, &r.in.ID, &r.in.Source, &r.in.SessionID, &r.parts, &r.metadata,
		&r.in.Key, &r.in.Digest, &r.at, &r.state, &r.in.RunID, &r.in.Reason}
}

// input decodes the row; content that cannot be decoded is reported in
// the input's Corrupt, not as an error, so that one damaged row does not
// hide the rest of the inbox.
func (r *inputRow) input() (session.InboxInput, error) {
	in := r.in
	in.At, in.State = time.UnixMicro(r.at).UTC(), session.InputState(r.state)
	if err := inputjson.Decode(&in, r.parts, r.metadata); err != nil {
		in.Parts, in.Metadata, in.Corrupt = nil, nil, err.Error()
	}
	return in, nil
}

var _ session.BoundedInbox = (*Store)(nil)

// Submit stores in, through the writer: the unique indexes decide
// between submits of one id or key, in this process or another, and a
// submit that inserted nothing reads the input that holds its key. See
// session.Inbox.
func (st *Store) Submit(ctx context.Context, in *session.InboxInput) (session.InboxInput, bool, error) {
	return st.SubmitWithin(ctx, in, session.Bounds{})
}

// SubmitWithin is Submit whose insert counts the source's pending inputs
// first, in the writer's transaction: with one writer, a bound holds
// exactly. See session.BoundedInbox.
func (st *Store) SubmitWithin(ctx context.Context, in *session.InboxInput, b session.Bounds) (session.InboxInput, bool, error) {
	tenant := session.TenantOf(ctx)
	if err := in.Check(tenant); err != nil {
		return session.InboxInput{}, false, fmt.Errorf("sqlite: submit: %w", err)
	}
	parts, meta, err := inputjson.Encode(in)
	if err != nil {
		return session.InboxInput{}, false, fmt.Errorf("sqlite: submit: %w", err)
	}
	var metadata any // NULL, or the text
	if meta != nil {
		metadata = *meta
	}
	at := st.now().UnixMicro()
	size := inputjson.Size(in)
	var (
		seq      int64
		existing inputRow
		dup      bool
	)
	err = st.write(ctx, func(ctx context.Context, tx *wtx) error {
		dup = false // a write may run again (see writer)
		var err error
		if b == (session.Bounds{}) {
			err = tx.queryRow(sInsertInput, []any{tenant, in.ID, in.Source, in.SessionID, parts, metadata, in.Key, in.Digest, at, size}, &seq)
		} else {
			err = tx.queryRow(sInsertInputWithin, []any{tenant, in.ID, in.Source, in.SessionID, parts, metadata, in.Key, in.Digest, at, size,
				b.Pending, b.Bytes}, &seq)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err // stored, or failed
		}
		if in.Key != "" {
			switch err := tx.queryRow(sInputByKey, []any{tenant, in.Source, in.Key}, existing.dests()...); {
			case err == nil && existing.in.Digest != in.Digest:
				return refuse(fmt.Errorf("source %q: key %q was given to another input (%s): %w",
					in.Source, in.Key, existing.in.ID, session.ErrConflict))
			case err == nil:
				dup = true
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		if b != (session.Bounds{}) {
			full := &session.FullError{Bounds: b}
			if err := tx.queryRow(sPendingSize, []any{tenant, in.Source}, &full.Pending, &full.Bytes); err != nil {
				return err
			}
			if !b.Fits(full.Pending, full.Bytes, int64(size)) {
				return refuse(full)
			}
		}
		return refuse(fmt.Errorf("input %q exists: %w", in.ID, session.ErrExists))
	})
	if err != nil {
		return session.InboxInput{}, false, fmt.Errorf("sqlite: submit input %q: %w", in.ID, err)
	}
	if dup {
		got, err := existing.input()
		if err != nil {
			return session.InboxInput{}, false, fmt.Errorf("sqlite: submit input %q: %w", in.ID, err)
		}
		return got, true, nil
	}
	stored := session.InboxInput{ID: in.ID, Tenant: tenant, Source: in.Source, SessionID: in.SessionID,
		Metadata: maps.Clone(in.Metadata), Key: in.Key, Digest: in.Digest,
		At: time.UnixMicro(at).UTC(), Seq: seq, State: session.InputPending}
	// The parts as stored: data compact, and the caller's bytes not shared.
	if err := inputjson.Decode(&stored, []byte(parts), nil); err != nil {
		return session.InboxInput{}, false, fmt.Errorf("sqlite: submit: %w", err)
	}
	return stored, false, nil
}

// PendingSources lists the sources with pending inputs. See
// session.Inbox.
func (st *Store) PendingSources(ctx context.Context, limit int) ([]session.SourceState, error) {
	if limit <= 0 {
		limit = -1 // SQLite's no limit
	}
	// A source's pending inputs, grouped through inbox_pending; then its
	// first's time, and its last's time and session, by rowid.
	rows, err := st.query(ctx, `SELECT g.tenant, g.source, g.n, g.bytes, f.at, l.at, g.last, l.session_id
		FROM (SELECT tenant, source, count(*) AS n, sum(size) AS bytes, min(seq) AS first, max(seq) AS last
			FROM inbox WHERE state = 'pending' GROUP BY tenant, source) g
		JOIN inbox f ON f.seq = g.first JOIN inbox l ON l.seq = g.last
		ORDER BY g.first `+limitParam, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending sources: %w", err)
	}
	defer rows.Close()
	return inputjson.SourceStates(rows, "sqlite")
}

// pendingOfSQL summarises a source's pending inputs from inbox_pending
// alone (it holds their sizes), then reads its first's time and its
// last's time and session by seq.
const pendingOfSQL = `SELECT g.tenant, g.source, g.n, g.bytes, f.at, l.at, g.last, l.session_id
	FROM (SELECT tenant, source, count(*) AS n, sum(size) AS bytes, min(seq) AS first, max(seq) AS last
		FROM inbox INDEXED BY inbox_pending WHERE tenant = ? AND source = ? AND state = 'pending' GROUP BY tenant, source) g
	JOIN inbox f ON f.seq = g.first JOIN inbox l ON l.seq = g.last`

// PendingOf summarises the source's pending inputs. See session.Inbox.
func (st *Store) PendingOf(ctx context.Context, source string) (session.SourceState, error) {
	tenant := session.TenantOf(ctx)
	rows, err := st.pendingOf.QueryContext(ctx, tenant, source)
	if err != nil {
		return session.SourceState{}, fmt.Errorf("sqlite: pending inputs of %q: %w", source, err)
	}
	defer rows.Close()
	states, err := inputjson.SourceStates(rows, "sqlite")
	if err != nil || len(states) == 0 {
		return session.SourceState{Tenant: tenant, Source: source}, err
	}
	return states[0], nil
}

// Pending returns the source's pending inputs in order. See
// session.Inbox.
func (st *Store) Pending(ctx context.Context, source string, limit int) ([]session.InboxInput, error) {
	if limit <= 0 {
		limit = -1
	}
	return st.inputs(ctx, "pending inputs of", source, `SELECT `+inputColumns+` FROM inbox
		WHERE tenant = ? AND source = ? AND state = 'pending' ORDER BY seq `+limitParam, session.TenantOf(ctx), source, limit)
}

// Inputs returns the source's inputs after a seq. See session.Inbox.
func (st *Store) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	if limit <= 0 {
		limit = -1
	}
	return st.inputs(ctx, "inputs of", source, `SELECT `+inputColumns+` FROM inbox
		WHERE tenant = ? AND source = ? AND seq > ? ORDER BY seq `+limitParam, session.TenantOf(ctx), source, after, limit)
}

// inputs runs a query of inputColumns.
func (st *Store) inputs(ctx context.Context, op, source, query string, args ...any) ([]session.InboxInput, error) {
	rows, err := st.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, source, err)
	}
	defer rows.Close()
	var out []session.InboxInput
	for rows.Next() {
		var r inputRow
		if err := rows.Scan(r.dests()...); err != nil {
			return nil, fmt.Errorf("sqlite: %s %q: %w", op, source, err)
		}
		in, err := r.input()
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s %q: %w", op, source, err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, source, err)
	}
	return out, nil
}

// Refuse marks pending inputs refused. See session.Inbox.
func (st *Store) Refuse(ctx context.Context, ids []string, reason string) error {
	if len(ids) == 0 {
		return ctx.Err()
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("sqlite: refuse inputs: %w", err)
	}
	tenant := session.TenantOf(ctx)
	err = st.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.exec(sRefuseInputs, reason, tenant, string(list))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: refuse inputs: %w", err)
	}
	return nil
}

// unanswerable reports, with a refusal, a commit whose answers name an
// input of the tenant that is not pending — unless the commit is refused
// for its session first (see sessionRefusal), as it would be without
// answers. It changes nothing.
func (st *Store) unanswerable(tx *wtx, tenant string, c *session.Commit, answers string) error {
	var id, state string
	switch err := tx.queryRow(sUnanswerable, []any{answers, tenant}, &id, &state); {
	case errors.Is(err, sql.ErrNoRows):
		return nil // all pending
	case err != nil:
		return err
	}
	if _, err := st.sessionRefusal(tx, tenant, c); err != nil {
		return refuseKnown(err)
	}
	if state == "" {
		return refuse(fmt.Errorf("input %q is not in the inbox: %w", id, session.ErrConflict))
	}
	return refuse(fmt.Errorf("input %q is %s, not pending: %w", id, state, session.ErrConflict))
}

// answerInputs marks the inputs of the commit's answers (JSON) answered by its
// run. The caller has found them all pending in this transaction
// (unanswerable); fewer changed is an error that gives the write up.
func answerInputs(tx *wtx, tenant string, c *session.Commit, answers string) error {
	n, err := tx.exec(sAnswerInputs, c.RunID, tenant, answers)
	if err != nil {
		return fmt.Errorf("answering inputs: %w", err)
	}
	if n != int64(len(c.Answers)) {
		return fmt.Errorf("answering %d inputs changed %d", len(c.Answers), n)
	}
	return nil
}
