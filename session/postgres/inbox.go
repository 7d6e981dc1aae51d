package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/group"
	"github.com/agentrt/agentrt/session/internal/inputjson"
)

var _ session.Inbox = (*Store)(nil)

// inputColumns are the columns an input is read from (see scanInput).
const inputColumns = `seq, tenant, id, source, session_id, parts, metadata, key, digest, at, state, run_id, reason`

// scanInput reads an input of inputColumns.
func scanInput(row pgx.Row) (session.InboxInput, error) {
	var (
		in        session.InboxInput
		parts     string
		metadata  *string
		at        int64
		state     string
		metaBytes []byte
	)
	if err := row.Scan(&in.Seq, &in.Tenant, &in.ID, &in.Source, &in.SessionID, &parts, &metadata,
		&in.Key, &in.Digest, &at, &state, &in.RunID, &in.Reason); err != nil {
		return session.InboxInput{}, err
	}
	in.At, in.State = time.UnixMicro(at).UTC(), session.InputState(state)
	if metadata != nil {
		metaBytes = []byte(*metadata)
	}
	if err := inputjson.Decode(&in, []byte(parts), metaBytes); err != nil {
		// One damaged row does not hide the rest of the inbox.
		in.Parts, in.Metadata, in.Corrupt = nil, nil, err.Error()
	}
	return in, nil
}

// submitSQL stores an input with the next seq of inbox_counter, unless
// its id or key is taken, or its source has no room — as many pending
// inputs as $11, or their size and its own ($10) over $12 (a bound of
// zero: none) — then it returns no row. The counter's row stays locked
// until the statement commits: submits commit in the order of their
// seqs, and each counts what those before it stored.
const submitSQL = `WITH n AS (
	UPDATE inbox_counter SET last = last + 1 WHERE id = 1 RETURNING last
)
INSERT INTO inbox (tenant, id, seq, source, session_id, parts, metadata, key, digest, at, size, state)
SELECT $1, $2, n.last, $3, $4, $5, $6, $7, $8, $9, $10::bigint, 'pending' FROM n
WHERE ($11::int <= 0 OR (SELECT count(*) FROM inbox WHERE tenant = $1 AND source = $3 AND state = 'pending') < $11::int)
	AND ($12::bigint <= 0 OR (SELECT coalesce(sum(size), 0) FROM inbox WHERE tenant = $1 AND source = $3 AND state = 'pending') + $10::bigint <= $12::bigint)
ON CONFLICT DO NOTHING
RETURNING seq`

// pendingSubmit is one Submit's row, written in a batch (flushSubmits):
// seq is the seq it was stored with, zero if it stored nothing.
type pendingSubmit struct {
	args []any // as submitSQL takes them
	seq  int64
}

// submitBatchSQL stores a batch of inputs in one statement, in the order
// given, with consecutive seqs from inbox_counter: one update of the
// counter's row for the batch, which stays locked until the statement
// commits, so that batches commit in the order of their seqs. A row whose
// id or key is taken, or whose source has no room (as submitSQL counts
// it, before the batch: the batch's rows of one source do not count each
// other), is left out (its seq unused); the statement returns the ids it
// stored, with their seqs.
const submitBatchSQL = `WITH n AS (
	UPDATE inbox_counter SET last = last + cardinality($1::text[]) WHERE id = 1 RETURNING last
), r AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::int[], $12::bigint[])
		WITH ORDINALITY AS r(tenant, id, source, session_id, parts, metadata, key, digest, at, size, max_pending, max_bytes, ord)
)
INSERT INTO inbox (tenant, id, seq, source, session_id, parts, metadata, key, digest, at, size, state)
SELECT r.tenant, r.id, n.last - cardinality($1::text[]) + r.ord, r.source, r.session_id, r.parts, r.metadata, r.key, r.digest, r.at, r.size, 'pending'
FROM r, n
WHERE (r.max_pending <= 0 OR (SELECT count(*) FROM inbox i WHERE i.tenant = r.tenant AND i.source = r.source AND i.state = 'pending') < r.max_pending)
	AND (r.max_bytes <= 0 OR (SELECT coalesce(sum(i.size), 0) FROM inbox i WHERE i.tenant = r.tenant AND i.source = r.source AND i.state = 'pending') + r.size <= r.max_bytes)
ORDER BY r.ord
ON CONFLICT DO NOTHING
RETURNING tenant, id, seq`

// flushSubmits writes a batch of submits: one alone as submitSQL, more in
// one statement (submitBatchSQL). Submits are serial through the
// counter's row whatever is done, so batching them is what lets many
// submit at once. If the batch fails as a whole, each is written again on
// its own, so that each outcome is its own.
func (st *Store) flushSubmits(ops []*group.Op[*pendingSubmit]) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	one := func(op *group.Op[*pendingSubmit]) {
		err := st.pool.QueryRow(ctx, submitSQL, op.W.args...).Scan(&op.W.seq)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil // seq zero: stored nothing
		}
		op.Answer(err)
	}
	// The statement's rows name the inputs stored by tenant and id: a
	// second submit of an id goes after the batch, on its own, to be told
	// the id is taken (not that it stored the first's row).
	ids := make(map[[2]string]bool, len(ops))
	var again []*group.Op[*pendingSubmit]
	ops = slices.DeleteFunc(slices.Clone(ops), func(op *group.Op[*pendingSubmit]) bool {
		k := [2]string{op.W.args[0].(string), op.W.args[1].(string)}
		if ids[k] {
			again = append(again, op)
			return true
		}
		ids[k] = true
		return false
	})
	defer func() {
		for _, op := range again {
			one(op)
		}
	}()
	if len(ops) == 1 {
		one(ops[0])
		return
	}
	cols := make([][]any, 12)
	for i := range cols {
		cols[i] = make([]any, len(ops))
		for j, op := range ops {
			cols[i][j] = op.W.args[i]
		}
	}
	// Typed arrays: the metadata column may hold NULLs.
	texts := func(c []any) []*string {
		out := make([]*string, len(c))
		for i, v := range c {
			switch x := v.(type) {
			case string:
				out[i] = &x
			case *string:
				out[i] = x
			}
		}
		return out
	}
	ints := func(c []any) []int64 {
		out := make([]int64, len(c))
		for i, v := range c {
			out[i] = v.(int64)
		}
		return out
	}
	counts := make([]int32, len(ops))
	for i, v := range cols[10] {
		counts[i] = v.(int32)
	}
	args := []any{texts(cols[0]), texts(cols[1]), texts(cols[2]), texts(cols[3]), texts(cols[4]), texts(cols[5]), texts(cols[6]), texts(cols[7]),
		ints(cols[8]), ints(cols[9]), counts, ints(cols[11])}
	rows, err := st.pool.Query(ctx, submitBatchSQL, args...)
	stored := map[[2]string]int64{}
	if err == nil {
		for rows.Next() {
			var tenant, id string
			var seq int64
			if err = rows.Scan(&tenant, &id, &seq); err != nil {
				break
			}
			stored[[2]string{tenant, id}] = seq
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		for _, op := range ops {
			one(op)
		}
		return
	}
	for _, op := range ops {
		op.W.seq = stored[[2]string{op.W.args[0].(string), op.W.args[1].(string)}]
		op.Answer(nil)
	}
}

var _ session.BoundedInbox = (*Store)(nil)

// Submit stores in. The unique indexes decide between submits of one id
// or key, from any process: a submit that stored nothing reads the input
// that holds its key (committed by then: Postgres waits for the
// transaction of a conflicting row to end). See session.Inbox.
func (st *Store) Submit(ctx context.Context, in *session.InboxInput) (session.InboxInput, bool, error) {
	return st.SubmitWithin(ctx, in, session.Bounds{})
}

// SubmitWithin is Submit whose statement counts the source's pending
// inputs first: submits take their seqs one after another, each counting
// what those before it stored, but for the inputs of one source in one
// batch. See session.BoundedInbox.
func (st *Store) SubmitWithin(ctx context.Context, in *session.InboxInput, b session.Bounds) (session.InboxInput, bool, error) {
	tenant := session.TenantOf(ctx)
	if err := in.Check(tenant); err != nil {
		return session.InboxInput{}, false, fmt.Errorf("postgres: submit: %w", err)
	}
	parts, metadata, err := inputjson.Encode(in)
	if err != nil {
		return session.InboxInput{}, false, fmt.Errorf("postgres: submit: %w", err)
	}
	at := st.now().UnixMicro()
	size := int64(inputjson.Size(in))
	w := &pendingSubmit{args: []any{tenant, in.ID, in.Source, in.SessionID, parts, metadata, in.Key, in.Digest, at, size,
		int32(min(b.Pending, math.MaxInt32)), b.Bytes}}
	err = st.submits.Do(ctx, w)
	seq := w.seq
	if err == nil && seq == 0 {
		err = pgx.ErrNoRows // stored nothing: its id or key is taken
	}
	switch {
	case err == nil:
		stored := session.InboxInput{ID: in.ID, Tenant: tenant, Source: in.Source, SessionID: in.SessionID,
			Metadata: maps.Clone(in.Metadata), Key: in.Key, Digest: in.Digest,
			At: time.UnixMicro(at).UTC(), Seq: seq, State: session.InputPending}
		// The parts as stored: data compact, the caller's bytes not shared.
		if err := inputjson.Decode(&stored, []byte(parts), nil); err != nil {
			return session.InboxInput{}, false, fmt.Errorf("postgres: submit: %w", err)
		}
		return stored, false, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return session.InboxInput{}, false, fmt.Errorf("postgres: submit input %q: %w", in.ID, err)
	}
	if in.Key != "" {
		old, err := scanInput(st.pool.QueryRow(ctx, `SELECT `+inputColumns+` FROM inbox
			WHERE tenant = $1 AND source = $2 AND key = $3 AND key <> ''`, tenant, in.Source, in.Key))
		switch {
		case err == nil && old.Digest != in.Digest:
			return session.InboxInput{}, false, fmt.Errorf("postgres: submit input %q: source %q: key %q was given to another input (%s): %w",
				in.ID, in.Source, in.Key, old.ID, session.ErrConflict)
		case err == nil:
			return old, true, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return session.InboxInput{}, false, fmt.Errorf("postgres: submit input %q: %w", in.ID, err)
		}
	}
	if b != (session.Bounds{}) {
		full := &session.FullError{Bounds: b}
		err := st.pool.QueryRow(ctx, `SELECT count(*)::int, coalesce(sum(size), 0)::bigint FROM inbox
			WHERE tenant = $1 AND source = $2 AND state = 'pending'`, tenant, in.Source).Scan(&full.Pending, &full.Bytes)
		if err != nil {
			return session.InboxInput{}, false, fmt.Errorf("postgres: submit input %q: %w", in.ID, err)
		}
		if !b.Fits(full.Pending, full.Bytes, size) {
			return session.InboxInput{}, false, fmt.Errorf("postgres: submit input %q: %w", in.ID, full)
		}
	}
	return session.InboxInput{}, false, fmt.Errorf("postgres: submit: input %q exists: %w", in.ID, session.ErrExists)
}

// PendingSources lists the sources with pending inputs. See
// session.Inbox.
func (st *Store) PendingSources(ctx context.Context, limit int) ([]session.SourceState, error) {
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	// A source's pending inputs, grouped through inbox_pending; then its
	// first's time, and its last's time and session, by seq.
	rows, err := st.pool.Query(ctx, `SELECT g.tenant, g.source, g.n, g.bytes, f.at, l.at, g.last, l.session_id
		FROM (SELECT tenant, source, count(*)::int AS n, sum(size)::bigint AS bytes, min(seq) AS first, max(seq) AS last
			FROM inbox WHERE state = 'pending' GROUP BY tenant, source) g
		JOIN inbox f ON f.seq = g.first JOIN inbox l ON l.seq = g.last
		ORDER BY g.first LIMIT $1::int`, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending sources: %w", err)
	}
	defer rows.Close()
	return inputjson.SourceStates(rows, "postgres")
}

// PendingOf summarises the source's pending inputs, through
// inbox_pending. See session.Inbox.
func (st *Store) PendingOf(ctx context.Context, source string) (session.SourceState, error) {
	tenant := session.TenantOf(ctx)
	rows, err := st.pool.Query(ctx, `SELECT g.tenant, g.source, g.n, g.bytes, f.at, l.at, g.last, l.session_id
		FROM (SELECT tenant, source, count(*)::int AS n, sum(size)::bigint AS bytes, min(seq) AS first, max(seq) AS last
			FROM inbox WHERE tenant = $1 AND source = $2 AND state = 'pending' GROUP BY tenant, source) g
		JOIN inbox f ON f.seq = g.first JOIN inbox l ON l.seq = g.last`, tenant, source)
	if err != nil {
		return session.SourceState{}, fmt.Errorf("postgres: pending inputs of %q: %w", source, err)
	}
	defer rows.Close()
	states, err := inputjson.SourceStates(rows, "postgres")
	if err != nil || len(states) == 0 {
		return session.SourceState{Tenant: tenant, Source: source}, err
	}
	return states[0], nil
}

// Pending returns the source's pending inputs in order. See
// session.Inbox.
func (st *Store) Pending(ctx context.Context, source string, limit int) ([]session.InboxInput, error) {
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	return st.inputs(ctx, "pending inputs of", source, `SELECT `+inputColumns+` FROM inbox
		WHERE tenant = $1 AND source = $2 AND state = 'pending' ORDER BY seq LIMIT $3::int`, session.TenantOf(ctx), source, lim)
}

// Inputs returns the source's inputs after a seq. See session.Inbox.
func (st *Store) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	return st.inputs(ctx, "inputs of", source, `SELECT `+inputColumns+` FROM inbox
		WHERE tenant = $1 AND source = $2 AND seq > $3 ORDER BY seq LIMIT $4::int`, session.TenantOf(ctx), source, after, lim)
}

// inputs runs a query of inputColumns.
func (st *Store) inputs(ctx context.Context, op, source, query string, args ...any) ([]session.InboxInput, error) {
	rows, err := st.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %q: %w", op, source, err)
	}
	defer rows.Close()
	var out []session.InboxInput
	for rows.Next() {
		in, err := scanInput(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: %s %q: %w", op, source, err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s %q: %w", op, source, err)
	}
	return out, nil
}

// Refuse marks pending inputs refused. See session.Inbox.
func (st *Store) Refuse(ctx context.Context, ids []string, reason string) error {
	if len(ids) == 0 {
		return ctx.Err()
	}
	_, err := st.pool.Exec(ctx, `UPDATE inbox SET state = 'refused', reason = $3
		WHERE tenant = $1 AND id = ANY($2::text[]) AND state = 'pending'`, session.TenantOf(ctx), ids, reason)
	if err != nil {
		return fmt.Errorf("postgres: refuse inputs: %w", err)
	}
	return nil
}

// unanswerable says which of ids is not a pending input of the tenant,
// for a commit refused for its answers; nil if they all are (by now).
func (st *Store) unanswerable(ctx context.Context, tenant string, ids []string) error {
	var id, state string
	err := st.pool.QueryRow(ctx, `SELECT j.id, coalesce(i.state, '') FROM unnest($2::text[]) AS j(id)
		LEFT JOIN inbox i ON i.tenant = $1 AND i.id = j.id
		WHERE i.state IS DISTINCT FROM 'pending' LIMIT 1`, tenant, ids).Scan(&id, &state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case state == "":
		return fmt.Errorf("input %q is not in the inbox: %w", id, session.ErrConflict)
	}
	return fmt.Errorf("input %q is %s, not pending: %w", id, state, session.ErrConflict)
}
