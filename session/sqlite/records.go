package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/session"
)

var _ session.Records = (*Store)(nil)

// PutRecord writes r through the writer: the session's row and the
// record's version are checked in the write's transaction. See
// session.Records.
func (st *Store) PutRecord(ctx context.Context, r *session.Record) (int64, error) {
	tenant := session.TenantOf(ctx)
	name := fmt.Sprintf("sqlite: put record %s/%s/%s of session %q", r.Kind, r.Key, r.ID, r.SessionID)
	if !json.Valid(r.Data) {
		return 0, fmt.Errorf("%s: its data is not JSON", name)
	}
	data := string(r.Data)
	var v int64
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		var one int64
		switch err := tx.queryRow(sSessionExists, []any{tenant, r.SessionID}, &one); {
		case errors.Is(err, sql.ErrNoRows):
			return refuse(session.ErrNotFound)
		case err != nil:
			return err
		}
		key := []any{tenant, r.SessionID, r.Kind, r.Key, r.ID}
		switch {
		case r.Version < 0:
			return tx.queryRow(sUpsertRecord, append(key, data), &v)
		case r.Version == 0:
			err := tx.queryRow(sInsertRecord, append(key, data), &v)
			if errors.Is(err, sql.ErrNoRows) {
				return refuse(session.ErrExists)
			}
			return err
		}
		err := tx.queryRow(sUpdateRecord, append([]any{data}, append(key, r.Version)...), &v)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var cur int64
		switch err := tx.queryRow(sRecordVersion, key, &cur); {
		case errors.Is(err, sql.ErrNoRows):
			return refuse(session.ErrNotFound)
		case err != nil:
			return err
		}
		return refuse(fmt.Errorf("at version %d, not %d: %w", cur, r.Version, session.ErrConflict))
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// SessionRecords returns session id's records of kind (and key). See
// session.Records.
func (st *Store) SessionRecords(ctx context.Context, id, kind, key string) ([]session.Record, error) {
	q := `SELECT tenant, session_id, kind, key, id, data, version FROM records
		WHERE tenant = ? AND session_id = ? AND kind = ? ORDER BY key, id`
	args := []any{session.TenantOf(ctx), id, kind}
	if key != "" {
		q = `SELECT tenant, session_id, kind, key, id, data, version FROM records
			WHERE tenant = ? AND session_id = ? AND kind = ? AND key = ? ORDER BY id`
		args = append(args, key)
	}
	out, err := st.records(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: records %s of session %q: %w", kind, id, err)
	}
	return out, nil
}

// DeleteRecord removes a record. See session.Records.
func (st *Store) DeleteRecord(ctx context.Context, id, kind, key, recordID string) error {
	tenant := session.TenantOf(ctx)
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		n, err := tx.exec(sDeleteRecord, tenant, id, kind, key, recordID)
		if err == nil && n == 0 {
			return refuse(session.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete record %s/%s/%s of session %q: %w", kind, key, recordID, id, err)
	}
	return nil
}

// KindRecords returns every tenant's records of kind, through
// records_kind. See session.Records.
func (st *Store) KindRecords(ctx context.Context, kind string, limit int) ([]session.Record, error) {
	if limit <= 0 {
		limit = -1 // SQLite's no limit
	}
	out, err := st.records(ctx, `SELECT tenant, session_id, kind, key, id, data, version FROM records
		WHERE kind = ? ORDER BY tenant, session_id, key, id `+limitParam, kind, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: records %s: %w", kind, err)
	}
	return out, nil
}

// records reads the records query q gives.
func (st *Store) records(ctx context.Context, q string, args ...any) ([]session.Record, error) {
	rows, err := st.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Record
	for rows.Next() {
		var r session.Record
		var data []byte
		if err := rows.Scan(&r.Tenant, &r.SessionID, &r.Kind, &r.Key, &r.ID, &data, &r.Version); err != nil {
			return nil, err
		}
		r.Data = json.RawMessage(data)
		out = append(out, r)
	}
	return out, rows.Err()
}
