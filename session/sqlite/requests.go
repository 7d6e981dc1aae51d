package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/reqindex"
)

var (
	_ session.RequestIndex = (*Store)(nil)
	_ session.LeaseIndex   = (*Store)(nil)
)

// upsertRequest stores a pending request (see requestArgs), replacing
// one of its id: the agent that asked is the session's when the event
// names none. A session that does not exist gets none.
const upsertRequest = `INSERT INTO requests (tenant, session_id, request_id, seq, agent, kind, asked, expires, data)
	SELECT ?1, ?2, ?3, ?4, coalesce(nullif(?5, ''), s.agent), ?6, ?7, ?8, CAST(?9 AS TEXT) FROM sessions s WHERE s.tenant = ?1 AND s.id = ?2
	ON CONFLICT (tenant, session_id, request_id) DO UPDATE SET seq = excluded.seq, agent = excluded.agent, kind = excluded.kind,
		asked = excluded.asked, expires = excluded.expires, data = excluded.data`

// requestArgs are upsertRequest's arguments for row r of session id.
func requestArgs(tenant, id string, r reqindex.Row) []any {
	var expires any // NULL: never
	if r.Expires != nil {
		expires = *r.Expires
	}
	return []any{tenant, id, r.RequestID, r.Seq, r.Agent, r.Kind, r.Asked, expires, string(r.Data)}
}

// requestChanges is what a commit writes to the requests table: the
// rows of the requests it asks, and the ids of those it answers as a
// JSON array ("" for none).
type requestChanges struct {
	asked    []reqindex.Row
	resolved string
}

// changesOf returns what c writes to the requests table: nil, most
// often, for nothing (and nothing allocated: Commit's write captures it).
func changesOf(c *session.Commit) (*requestChanges, error) {
	asked, resolved, err := reqindex.Changes(c.Events)
	if err != nil || len(asked) == 0 && len(resolved) == 0 {
		return nil, err
	}
	rc := &requestChanges{asked: asked}
	if len(resolved) > 0 {
		b, err := json.Marshal(resolved)
		if err != nil {
			return nil, err
		}
		rc.resolved = string(b)
	}
	return rc, nil
}

// write applies the changes (none if rc is nil) to session id's requests
// in tx.
func (rc *requestChanges) write(tx *wtx, tenant, id string) error {
	if rc == nil {
		return nil
	}
	if rc.resolved != "" {
		if _, err := tx.exec(sDeleteRequests, tenant, id, rc.resolved); err != nil {
			return fmt.Errorf("answered requests: %w", err)
		}
	}
	for _, r := range rc.asked {
		if _, err := tx.exec(sUpsertRequest, requestArgs(tenant, id, r)...); err != nil {
			return fmt.Errorf("request %q: %w", r.RequestID, err)
		}
	}
	return nil
}

// requestColumns are the columns a pending request is read from.
const requestColumns = `tenant, session_id, agent, seq, asked, data`

// PendingRequests returns the context tenant's pending requests, oldest
// first, through requests_asked. See session.RequestIndex.
func (st *Store) PendingRequests(ctx context.Context, opt session.RequestListOptions) ([]session.PendingRequest, error) {
	q, args := pendingRequestsQuery(session.TenantOf(ctx), opt)
	return st.requests(ctx, "pending requests", q, args...)
}

// pendingRequestsQuery is PendingRequests' query and its arguments.
func pendingRequestsQuery(tenant string, opt session.RequestListOptions) (string, []any) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT ` + requestColumns + ` FROM requests WHERE tenant = ?`
	args := []any{tenant}
	if opt.SessionID != "" {
		q, args = q+` AND session_id = ?`, append(args, opt.SessionID)
	}
	if opt.Agent != "" {
		q, args = q+` AND agent = ?`, append(args, opt.Agent)
	}
	if opt.Kind != "" {
		q, args = q+` AND kind = ?`, append(args, string(opt.Kind))
	}
	if a := opt.After; !a.IsZero() {
		q, args = q+` AND (asked, session_id, seq) > (?, ?, ?)`, append(args, a.Asked.UnixMicro(), a.SessionID, a.Seq)
	}
	return q + ` ORDER BY asked, session_id, seq ` + limitParam, append(args, limit)
}

// ExpiredRequests returns the requests of every tenant whose deadline is
// at or before now, through requests_expires. See session.RequestIndex.
func (st *Store) ExpiredRequests(ctx context.Context, now time.Time, after *session.PendingRequest, limit int) ([]session.PendingRequest, error) {
	q, args, err := expiredRequestsQuery(now, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return st.requests(ctx, "expired requests", q, args...)
}

// expiredRequestsQuery is ExpiredRequests' query and its arguments.
func expiredRequestsQuery(now time.Time, after *session.PendingRequest, limit int) (string, []any, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	// The rows' deadlines are rounded up; now, down.
	q := `SELECT ` + requestColumns + ` FROM requests WHERE expires IS NOT NULL AND expires <= ?`
	args := []any{now.UnixMicro()}
	if after != nil {
		if after.Request.Expires == nil {
			return "", nil, fmt.Errorf("expired requests: the cursor, request %q of session %q, has no deadline", after.Request.RequestID, after.SessionID)
		}
		q += ` AND (expires, tenant, session_id, seq) > (?, ?, ?, ?)`
		args = append(args, reqindex.CeilMicro(*after.Request.Expires), after.Tenant, after.SessionID, after.Seq)
	}
	return q + ` ORDER BY expires, tenant, session_id, seq ` + limitParam, append(args, limit), nil
}

// requests runs a query of requestColumns.
func (st *Store) requests(ctx context.Context, what, query string, args ...any) ([]session.PendingRequest, error) {
	rows, err := st.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	defer rows.Close()
	var out []session.PendingRequest
	for rows.Next() {
		var (
			tenant, id, agent string
			seq, asked        int64
			data              []byte
		)
		if err := rows.Scan(&tenant, &id, &agent, &seq, &asked, &data); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", what, err)
		}
		p, err := reqindex.Decode(tenant, id, agent, seq, asked, data)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", what, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return out, nil
}

// ExpiredLeases returns the running sessions of every tenant whose lease
// expired, or that have none, through sessions_leases. See
// session.LeaseIndex.
func (st *Store) ExpiredLeases(ctx context.Context, after *session.Session, limit int) ([]*session.Session, error) {
	q, args := expiredLeasesQuery(st.now(), after, limit)
	return st.sessionsOf(ctx, "expired leases", q, args...)
}

// expiredLeasesQuery is ExpiredLeases' query, by the leases' clock now,
// and its arguments: the page of sessions (of the index's own WHERE,
// which SQLite needs to use it), then their last events rows.
func expiredLeasesQuery(now time.Time, after *session.Session, limit int) (string, []any) {
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT * FROM sessions WHERE status = 'running' AND lease_expires <= ?`
	args := []any{now.UnixMicro()}
	if after != nil {
		var expires int64 // none held: 0, as the table keeps it
		if after.Lease != nil {
			expires = after.Lease.Expires.UnixMicro()
		}
		q, args = q+` AND (lease_expires, tenant, id) > (?, ?, ?)`, append(args, expires, after.Tenant, after.ID)
	}
	q += ` ORDER BY lease_expires, tenant, id ` + limitParam
	return `SELECT ` + selectColumns + withLastRow("("+q+")") + ` ORDER BY s.lease_expires, s.tenant, s.id`, append(args, limit)
}

// LeaseOwners returns the owners of the running sessions' leases whose
// names begin with ownerPrefix, through sessions_owners. See
// session.LeaseIndex.
func (st *Store) LeaseOwners(ctx context.Context, ownerPrefix string) ([]string, error) {
	if ownerPrefix == "" {
		return nil, fmt.Errorf("sqlite: lease owners: the owner prefix is empty")
	}
	q, args := leaseOwnersQuery(ownerPrefix)
	rows, err := st.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lease owners %q: %w", ownerPrefix, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("sqlite: lease owners %q: %w", ownerPrefix, err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: lease owners %q: %w", ownerPrefix, err)
	}
	return out, nil
}

// leaseOwnersQuery is LeaseOwners' query and its arguments: the owners
// that begin with the prefix are a range of the index, in the order of
// their bytes (the column's), and each next owner is one seek into it
// past the one before, however many sessions each holds.
func leaseOwnersQuery(ownerPrefix string) (string, []any) {
	next := func(from string) string {
		q := `SELECT lease_owner FROM sessions WHERE status = 'running' AND lease_owner IS NOT NULL AND lease_owner ` + from
		if reqindex.PrefixEnd(ownerPrefix) != "" {
			q += ` AND lease_owner < ?2`
		}
		return `(` + q + ` ORDER BY lease_owner LIMIT 1)`
	}
	q := `WITH RECURSIVE o(owner) AS (SELECT ` + next(`>= ?1`) + `
		UNION ALL SELECT ` + next(`> o.owner`) + ` FROM o WHERE o.owner IS NOT NULL)
		SELECT owner FROM o WHERE owner IS NOT NULL`
	args := []any{ownerPrefix}
	if end := reqindex.PrefixEnd(ownerPrefix); end != "" {
		args = append(args, end)
	}
	return q, args
}

// LeasedTo returns the running sessions of every tenant leased to owner,
// through sessions_owners. See session.LeaseIndex.
func (st *Store) LeasedTo(ctx context.Context, owner string, after *session.Session, limit int) ([]*session.Session, error) {
	q, args := leasedToQuery(owner, after, limit)
	return st.sessionsOf(ctx, "sessions leased to "+owner, q, args...)
}

// leasedToQuery is LeasedTo's query and its arguments.
func leasedToQuery(owner string, after *session.Session, limit int) (string, []any) {
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT * FROM sessions WHERE status = 'running' AND lease_owner IS NOT NULL AND lease_owner = ?`
	args := []any{owner}
	if after != nil {
		q, args = q+` AND (tenant, id) > (?, ?)`, append(args, after.Tenant, after.ID)
	}
	q += ` ORDER BY tenant, id ` + limitParam
	return `SELECT ` + selectColumns + withLastRow("("+q+")") + ` ORDER BY s.tenant, s.id`, append(args, limit)
}

// sessionsOf runs a query of selectColumns.
func (st *Store) sessionsOf(ctx context.Context, what, query string, args ...any) ([]*session.Session, error) {
	rows, err := st.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	defer rows.Close()
	var out []*session.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", what, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return out, nil
}

// CountRequests returns how many requests of every tenant are pending.
// See session.RequestIndex.
func (st *Store) CountRequests(ctx context.Context) (int64, error) {
	var n int64
	if err := st.queryRow(ctx, `SELECT count(*) FROM requests`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count requests: %w", err)
	}
	return n, nil
}
