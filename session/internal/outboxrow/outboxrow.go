// Package outboxrow is an outbox item as the SQL stores keep it (times in
// microseconds), scanned the same way by each.
package outboxrow

import (
	"time"

	"github.com/agentrt/agentrt/session"
)

// Columns are an item's columns, in the order Dests scans them.
const Columns = `id, tenant, session_id, seq, kind, source, state, attempts, due, ref, error, created`

// Row is an item being scanned.
type Row struct {
	it           session.OutboxItem
	due, created int64
	attempts     int64
}

// Dests are the destinations of a row of Columns.
func (r *Row) Dests() []any {
	return []any{&r.it.ID, &r.it.Tenant, &r.it.SessionID, &r.it.Seq, &r.it.Kind, &r.it.Source, &r.it.State, &r.attempts, &r.due, &r.it.Ref, &r.it.Error, &r.created}
}

// Item is the item scanned.
func (r *Row) Item() session.OutboxItem {
	it := r.it
	it.Attempts, it.Due, it.Created = int(r.attempts), time.UnixMicro(r.due).UTC(), time.UnixMicro(r.created).UTC()
	return it
}
