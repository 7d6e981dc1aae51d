package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/session"
)

// outbox is the store's session.Outbox, guarded by the Store's mu: the
// pending items in ID order, and every item of each session.
type outbox struct {
	seq       int64
	pending   []*outItem
	byID      map[int64]*outItem
	bySession map[key][]*outItem
}

// outItem is an item and who holds its claim until when.
type outItem struct {
	session.OutboxItem
	owner string
	until time.Time
}

// add stores the items of commit c of tenant's session, pending and due
// at now.
func (b *outbox) add(tenant string, c *session.Commit, now time.Time) {
	if len(c.Outbox) == 0 {
		return
	}
	if b.byID == nil {
		b.byID, b.bySession = map[int64]*outItem{}, map[key][]*outItem{}
	}
	k := key{tenant, c.SessionID}
	for _, it := range c.Outbox {
		b.seq++
		o := &outItem{OutboxItem: session.OutboxItem{ID: b.seq, Tenant: tenant, SessionID: c.SessionID, Seq: it.Seq, Kind: it.Kind,
			Source: it.Source, State: session.OutboxPending, Due: now, Created: now}}
		b.pending = append(b.pending, o)
		b.byID[o.ID] = o
		b.bySession[k] = append(b.bySession[k], o)
	}
}

// forget drops the items of session k (deleted).
func (b *outbox) forget(k key) {
	items := b.bySession[k]
	if len(items) == 0 {
		return
	}
	for _, o := range items {
		delete(b.byID, o.ID)
	}
	delete(b.bySession, k)
	b.pending = slices.DeleteFunc(b.pending, func(o *outItem) bool { return o.Tenant == k.tenant && o.SessionID == k.id })
}

// ClaimOutbox claims due items. See session.Outbox.
func (st *Store) ClaimOutbox(ctx context.Context, owner string, now, until time.Time, limit int) ([]session.OutboxItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []session.OutboxItem
	seen := map[key]bool{} // sessions whose oldest pending item was looked at
	for _, o := range st.outbox.pending {
		if limit > 0 && len(out) == limit {
			break
		}
		k := key{o.Tenant, o.SessionID}
		if seen[k] {
			continue
		}
		seen[k] = true
		if o.Due.After(now) || (o.owner != "" && o.until.After(now)) {
			continue
		}
		o.owner, o.until = owner, until
		o.Attempts++
		out = append(out, o.OutboxItem)
	}
	return out, nil
}

// SettleOutbox records an attempt's end. See session.Outbox.
func (st *Store) SettleOutbox(ctx context.Context, id int64, owner string, s session.OutboxSettle) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	o := st.outbox.byID[id]
	switch {
	case o == nil:
		return fmt.Errorf("memstore: settle outbox item %d: no such item: %w", id, session.ErrConflict)
	case o.State != session.OutboxPending:
		return fmt.Errorf("memstore: settle outbox item %d: it is %s: %w", id, o.State, session.ErrConflict)
	case o.owner != owner:
		return fmt.Errorf("memstore: settle outbox item %d: %s holds no claim on it: %w", id, owner, session.ErrConflict)
	}
	o.owner, o.until = "", time.Time{}
	switch {
	case s.Sent:
		o.State, o.Ref, o.Error = session.OutboxSent, s.Ref, ""
	case s.GiveUp:
		o.State, o.Error = session.OutboxFailed, s.Error
	default:
		o.Error, o.Due = s.Error, s.Due
		return nil
	}
	st.outbox.pending = slices.DeleteFunc(st.outbox.pending, func(x *outItem) bool { return x == o })
	return nil
}

// OutboxOf lists a session's items. See session.Outbox.
func (st *Store) OutboxOf(ctx context.Context, id string) ([]session.OutboxItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []session.OutboxItem
	for _, o := range st.outbox.bySession[keyOf(ctx, id)] {
		out = append(out, o.OutboxItem)
	}
	return out, nil
}
