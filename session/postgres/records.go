package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
)

var _ session.Records = (*Store)(nil)

const recordColumns = `tenant, session_id, kind, key, id, data, version`

// PutRecord writes r in a transaction that holds the session's row (FOR
// KEY SHARE: a delete of the session waits for it). See session.Records.
func (st *Store) PutRecord(ctx context.Context, r *session.Record) (int64, error) {
	tenant := session.TenantOf(ctx)
	name := fmt.Sprintf("postgres: put record %s/%s/%s of session %q", r.Kind, r.Key, r.ID, r.SessionID)
	if !json.Valid(r.Data) {
		return 0, fmt.Errorf("%s: its data is not JSON", name)
	}
	data := string(r.Data)
	var v int64
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var one int
		switch err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE tenant = $1 AND id = $2 FOR KEY SHARE`, tenant, r.SessionID).Scan(&one); {
		case errors.Is(err, pgx.ErrNoRows):
			return session.ErrNotFound
		case err != nil:
			return err
		}
		key := []any{tenant, r.SessionID, r.Kind, r.Key, r.ID}
		switch {
		case r.Version < 0:
			return tx.QueryRow(ctx, `INSERT INTO records (`+recordColumns+`) VALUES ($1, $2, $3, $4, $5, $6, 1)
				ON CONFLICT (tenant, session_id, kind, key, id) DO UPDATE SET data = excluded.data, version = records.version + 1
				RETURNING version`, append(key, data)...).Scan(&v)
		case r.Version == 0:
			err := tx.QueryRow(ctx, `INSERT INTO records (`+recordColumns+`) VALUES ($1, $2, $3, $4, $5, $6, 1)
				ON CONFLICT DO NOTHING RETURNING version`, append(key, data)...).Scan(&v)
			if errors.Is(err, pgx.ErrNoRows) {
				return session.ErrExists
			}
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE records SET data = $6, version = version + 1
			WHERE tenant = $1 AND session_id = $2 AND kind = $3 AND key = $4 AND id = $5 AND version = $7
			RETURNING version`, append(key, data, r.Version)...).Scan(&v)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var cur int64
		switch err := tx.QueryRow(ctx, `SELECT version FROM records
			WHERE tenant = $1 AND session_id = $2 AND kind = $3 AND key = $4 AND id = $5`, key...).Scan(&cur); {
		case errors.Is(err, pgx.ErrNoRows):
			return session.ErrNotFound
		case err != nil:
			return err
		}
		return fmt.Errorf("at version %d, not %d: %w", cur, r.Version, session.ErrConflict)
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// SessionRecords returns session id's records of kind (and key). See
// session.Records.
func (st *Store) SessionRecords(ctx context.Context, id, kind, key string) ([]session.Record, error) {
	q := `SELECT ` + recordColumns + ` FROM records WHERE tenant = $1 AND session_id = $2 AND kind = $3 ORDER BY key, id`
	args := []any{session.TenantOf(ctx), id, kind}
	if key != "" {
		q = `SELECT ` + recordColumns + ` FROM records WHERE tenant = $1 AND session_id = $2 AND kind = $3 AND key = $4 ORDER BY id`
		args = append(args, key)
	}
	out, err := st.records(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: records %s of session %q: %w", kind, id, err)
	}
	return out, nil
}

// DeleteRecord removes a record. See session.Records.
func (st *Store) DeleteRecord(ctx context.Context, id, kind, key, recordID string) error {
	tag, err := st.pool.Exec(ctx, `DELETE FROM records WHERE tenant = $1 AND session_id = $2 AND kind = $3 AND key = $4 AND id = $5`,
		session.TenantOf(ctx), id, kind, key, recordID)
	if err == nil && tag.RowsAffected() == 0 {
		err = session.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: delete record %s/%s/%s of session %q: %w", kind, key, recordID, id, err)
	}
	return nil
}

// KindRecords returns every tenant's records of kind, through
// records_kind. See session.Records.
func (st *Store) KindRecords(ctx context.Context, kind string, limit int) ([]session.Record, error) {
	q := `SELECT ` + recordColumns + ` FROM records WHERE kind = $1 ORDER BY tenant, session_id, key, id`
	args := []any{kind}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	out, err := st.records(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: records %s: %w", kind, err)
	}
	return out, nil
}

// records reads the records query q gives.
func (st *Store) records(ctx context.Context, q string, args ...any) ([]session.Record, error) {
	rows, err := st.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Record
	for rows.Next() {
		var r session.Record
		var data string
		if err := rows.Scan(&r.Tenant, &r.SessionID, &r.Kind, &r.Key, &r.ID, &data, &r.Version); err != nil {
			return nil, err
		}
		r.Data = json.RawMessage(data)
		out = append(out, r)
	}
	return out, rows.Err()
}
