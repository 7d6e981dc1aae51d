package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/session"
)

var _ session.Records = (*Store)(nil)

// recordKey names a record within its session.
type recordKey struct{ kind, key, id string }

// PutRecord writes r. See session.Records.
func (st *Store) PutRecord(ctx context.Context, r *session.Record) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !json.Valid(r.Data) {
		return 0, fmt.Errorf("memstore: put record %s/%s/%s of session %q: its data is not JSON", r.Kind, r.Key, r.ID, r.SessionID)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, r.SessionID)]
	if !ok {
		return 0, notFound("put record of session", r.SessionID)
	}
	rk := recordKey{r.Kind, r.Key, r.ID}
	cur := e.records[rk]
	switch {
	case r.Version == 0 && cur != nil:
		return 0, fmt.Errorf("memstore: put record %s/%s/%s of session %q: %w", r.Kind, r.Key, r.ID, r.SessionID, session.ErrExists)
	case r.Version > 0 && cur == nil:
		return 0, fmt.Errorf("memstore: put record %s/%s/%s of session %q: %w", r.Kind, r.Key, r.ID, r.SessionID, session.ErrNotFound)
	case r.Version > 0 && cur.Version != r.Version:
		return 0, fmt.Errorf("memstore: put record %s/%s/%s of session %q at version %d (it is at %d): %w",
			r.Kind, r.Key, r.ID, r.SessionID, r.Version, cur.Version, session.ErrConflict)
	}
	v := int64(1)
	if cur != nil {
		v = cur.Version + 1
	}
	if e.records == nil {
		e.records = map[recordKey]*session.Record{}
	}
	e.records[rk] = &session.Record{Tenant: e.row.Tenant, SessionID: r.SessionID, Kind: r.Kind, Key: r.Key, ID: r.ID,
		Data: slices.Clone(r.Data), Version: v}
	return v, nil
}

// SessionRecords returns session id's records of kind (and key). See
// session.Records.
func (st *Store) SessionRecords(ctx context.Context, id, kind, key string) ([]session.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, id)]
	if !ok {
		return nil, nil
	}
	var out []session.Record
	for rk, r := range e.records {
		if rk.kind == kind && (key == "" || rk.key == key) {
			out = append(out, copyRecord(r))
		}
	}
	slices.SortFunc(out, compareRecords)
	return out, nil
}

// DeleteRecord removes a record. See session.Records.
func (st *Store) DeleteRecord(ctx context.Context, id, kind, key, recordID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, id)]
	rk := recordKey{kind, key, recordID}
	if !ok || e.records[rk] == nil {
		return fmt.Errorf("memstore: delete record %s/%s/%s of session %q: %w", kind, key, recordID, id, session.ErrNotFound)
	}
	delete(e.records, rk)
	return nil
}

// KindRecords returns every tenant's records of kind. See
// session.Records.
func (st *Store) KindRecords(ctx context.Context, kind string, limit int) ([]session.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	var out []session.Record
	for _, e := range st.sessions {
		for rk, r := range e.records {
			if rk.kind == kind {
				out = append(out, copyRecord(r))
			}
		}
	}
	st.mu.Unlock()
	slices.SortFunc(out, compareRecords)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func copyRecord(r *session.Record) session.Record {
	c := *r
	c.Data = slices.Clone(r.Data)
	return c
}

func compareRecords(a, b session.Record) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Key, b.Key), cmp.Compare(a.ID, b.ID))
}
