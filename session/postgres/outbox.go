package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/outboxrow"
)

// outboxColumns are an item's columns (outboxrow.Columns).
const outboxColumns = outboxrow.Columns

// outboxClaimLock serializes claims across processes (the key is
// arbitrary): a claim reads the older items of each session it claims
// from, which a concurrent claim could be taking.
const outboxClaimLock = 7422466824

// claimOutboxSQL claims for owner $1 until $2 the items that are their
// session's oldest pending one, due at $3 and whose claim has lapsed,
// oldest first, at most $4 (NULL: all).
const claimOutboxSQL = `UPDATE outbox SET owner = $1, until = $2, attempts = attempts + 1
	WHERE id IN (SELECT o.id FROM outbox o
		WHERE o.state = 'pending' AND o.due <= $3 AND (o.owner = '' OR o.until <= $3)
		AND NOT EXISTS (SELECT 1 FROM outbox p
			WHERE p.tenant = o.tenant AND p.session_id = o.session_id AND p.state = 'pending' AND p.id < o.id)
		ORDER BY o.id LIMIT $4)
	RETURNING ` + outboxColumns

func scanOutbox(rows pgx.Rows) ([]session.OutboxItem, error) {
	defer rows.Close()
	var out []session.OutboxItem
	for rows.Next() {
		var r outboxrow.Row
		if err := rows.Scan(r.Dests()...); err != nil {
			return nil, err
		}
		out = append(out, r.Item())
	}
	return out, rows.Err()
}

// ClaimOutbox claims due items. See session.Outbox.
func (st *Store) ClaimOutbox(ctx context.Context, owner string, now, until time.Time, limit int) ([]session.OutboxItem, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	var out []session.OutboxItem
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(outboxClaimLock)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, claimOutboxSQL, owner, until.UnixMicro(), now.UnixMicro(), lim)
		if err != nil {
			return err
		}
		out, err = scanOutbox(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim the outbox: %w", err)
	}
	slices.SortFunc(out, func(a, b session.OutboxItem) int { return int(a.ID - b.ID) })
	return out, nil
}

// SettleOutbox records an attempt's end. See session.Outbox.
func (st *Store) SettleOutbox(ctx context.Context, id int64, owner string, s session.OutboxSettle) error {
	state := session.OutboxPending
	var due any // NULL: it stays
	switch {
	case s.Sent:
		state = session.OutboxSent
	case s.GiveUp:
		state = session.OutboxFailed
	default:
		due = s.Due.UnixMicro()
	}
	tag, err := st.pool.Exec(ctx, `UPDATE outbox SET state = $1, ref = $2, error = $3, due = coalesce($4::bigint, due), owner = '', until = 0
		WHERE id = $5 AND owner = $6 AND state = 'pending'`, state, s.Ref, s.Error, due, id, owner)
	if err != nil {
		return fmt.Errorf("postgres: settle outbox item %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: settle outbox item %d: it is not pending, or %s holds no claim on it: %w", id, owner, session.ErrConflict)
	}
	return nil
}

// OutboxOf lists a session's items. See session.Outbox.
func (st *Store) OutboxOf(ctx context.Context, id string) ([]session.OutboxItem, error) {
	rows, err := st.pool.Query(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE tenant = $1 AND session_id = $2 ORDER BY id`, session.TenantOf(ctx), id)
	if err != nil {
		return nil, fmt.Errorf("postgres: the outbox of %q: %w", id, err)
	}
	out, err := scanOutbox(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: the outbox of %q: %w", id, err)
	}
	return out, nil
}
