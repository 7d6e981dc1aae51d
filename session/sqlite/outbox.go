package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/outboxrow"
)

// outboxColumns are an item's columns (outboxrow.Columns).
const outboxColumns = outboxrow.Columns

// insertOutbox stores the items commit c of tenant's session owes, due
// at now, in tx.
func insertOutbox(tx *wtx, tenant string, c *session.Commit, now time.Time) error {
	for _, it := range c.Outbox {
		if _, err := tx.exec(sInsertOutbox, tenant, c.SessionID, it.Seq, it.Kind, it.Source, now.UnixMicro(), now.UnixMicro()); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
	}
	return nil
}

// outboxItem reads an item from the driver's values of outboxColumns.
func outboxItem(row []driver.Value) (session.OutboxItem, error) {
	var r outboxrow.Row
	for i, d := range r.Dests() {
		switch d := d.(type) {
		case *int64:
			v, ok := row[i].(int64)
			if !ok {
				return session.OutboxItem{}, fmt.Errorf("outbox column %d is %T, not an integer", i+1, row[i])
			}
			*d = v
		case *string:
			switch v := row[i].(type) {
			case string:
				*d = v
			case []byte:
				*d = string(v)
			default:
				return session.OutboxItem{}, fmt.Errorf("outbox column %d is %T, not text", i+1, row[i])
			}
		}
	}
	return r.Item(), nil
}

// ClaimOutbox claims due items. See session.Outbox.
func (st *Store) ClaimOutbox(ctx context.Context, owner string, now, until time.Time, limit int) ([]session.OutboxItem, error) {
	if limit <= 0 {
		limit = -1
	}
	var out []session.OutboxItem
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		out = out[:0]
		return tx.queryRows(sClaimOutbox, []any{owner, until.UnixMicro(), now.UnixMicro(), limit}, func(row []driver.Value) error {
			it, err := outboxItem(row)
			out = append(out, it)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim the outbox: %w", err)
	}
	slices.SortFunc(out, func(a, b session.OutboxItem) int { return int(a.ID - b.ID) })
	return out, nil
}

// SettleOutbox records an attempt's end. See session.Outbox.
func (st *Store) SettleOutbox(ctx context.Context, id int64, owner string, s session.OutboxSettle) error {
	state, due := session.OutboxPending, int64(0)
	switch {
	case s.Sent:
		state = session.OutboxSent
	case s.GiveUp:
		state = session.OutboxFailed
	default:
		due = s.Due.UnixMicro()
	}
	err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
		if due == 0 {
			// Settled for good: the due time stays as it was.
			var d int64
			if err := tx.queryRow(sOutboxDue, []any{id}, &d); err == nil {
				due = d
			}
		}
		n, err := tx.exec(sSettleOutbox, state, s.Ref, s.Error, due, id, owner)
		if err != nil {
			return err
		}
		if n == 0 {
			return refuse(fmt.Errorf("item %d is not pending, or %s holds no claim on it: %w", id, owner, session.ErrConflict))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: settle outbox item %d: %w", id, err)
	}
	return nil
}

// OutboxOf lists a session's items. See session.Outbox.
func (st *Store) OutboxOf(ctx context.Context, id string) ([]session.OutboxItem, error) {
	rows, err := st.query(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE tenant = ? AND session_id = ? ORDER BY id`, session.TenantOf(ctx), id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: the outbox of %q: %w", id, err)
	}
	defer rows.Close()
	var out []session.OutboxItem
	for rows.Next() {
		var r outboxrow.Row
		if err := rows.Scan(r.Dests()...); err != nil {
			return nil, fmt.Errorf("sqlite: the outbox of %q: %w", id, err)
		}
		out = append(out, r.Item())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: the outbox of %q: %w", id, err)
	}
	return out, nil
}
