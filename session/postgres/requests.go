package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/reqindex"
)

var (
	_ session.RequestIndex = (*Store)(nil)
	_ session.LeaseIndex   = (*Store)(nil)
)

// requestWrites are what a commit whose events ask or answer requests
// writes to the requests table if its update u matched: the requests
// asked, from the arrays $n to $n+6 (ids, seqs, agents, kinds, asked,
// expires, data; see requestArgs), replacing those of their ids, the
// agent the session's when the event names none; and those answered,
// $n+7, deleted. reqindex.Changes makes the two sets apart, so that no
// row is written twice by the one statement.
func requestWrites(n int) string {
	return fmt.Sprintf(`rq AS (
	INSERT INTO requests (tenant, session_id, request_id, seq, agent, kind, asked, expires, data)
	SELECT $6, $7, r.id, r.seq, coalesce(nullif(r.agent, ''), (SELECT agent FROM u)), r.kind, r.asked, r.expires, r.data
	FROM unnest($%d::text[], $%d::bigint[], $%d::text[], $%d::text[], $%d::bigint[], $%d::bigint[], $%d::text[])
		AS r(id, seq, agent, kind, asked, expires, data)
	WHERE EXISTS (SELECT 1 FROM u)
	ON CONFLICT (tenant, session_id, request_id) DO UPDATE SET seq = excluded.seq, agent = excluded.agent, kind = excluded.kind,
		asked = excluded.asked, expires = excluded.expires, data = excluded.data
), rd AS (
	DELETE FROM requests WHERE tenant = $6 AND session_id = $7 AND request_id = ANY($%d::text[]) AND EXISTS (SELECT 1 FROM u)
), `, n, n+1, n+2, n+3, n+4, n+5, n+6, n+7)
}

// requestArgs are requestWrites' arguments for the changes a commit's
// events make.
func requestArgs(asked []reqindex.Row, resolved []string) []any {
	var (
		ids     = make([]string, len(asked))
		seqs    = make([]int64, len(asked))
		agents  = make([]string, len(asked))
		kinds   = make([]string, len(asked))
		at      = make([]int64, len(asked))
		expires = make([]*int64, len(asked))
		data    = make([]string, len(asked))
	)
	for i, r := range asked {
		ids[i], seqs[i], agents[i], kinds[i], at[i], expires[i], data[i] = r.RequestID, r.Seq, r.Agent, r.Kind, r.Asked, r.Expires, string(r.Data)
	}
	if resolved == nil {
		resolved = []string{}
	}
	return []any{ids, seqs, agents, kinds, at, expires, data, resolved}
}

// fills[v] fills in, after migrations[v-1], what version v keeps that the
// versions before did not, from the rows they left: work in Go, in the
// migration's transaction. A fill reads the schema of version v, never a
// later one.
var fills = map[int]func(ctx context.Context, tx pgx.Tx) error{
	4: fillRequests,
}

// fillRequests fills the requests of version 4 from the logs of the
// sessions a run goes on in (running, waiting): only those have pending
// requests (a run that ends otherwise answers or withdraws its own).
func fillRequests(ctx context.Context, tx pgx.Tx) error {
	type sess struct{ tenant, id string }
	var (
		order []sess
		logs  = map[sess][]*session.Event{}
	)
	rows, err := tx.Query(ctx, `SELECT e.tenant, e.session_id, e.seq, e.json FROM sessions s
		JOIN events e ON e.tenant = s.tenant AND e.session_id = s.id
		WHERE s.status IN ('running', 'waiting') AND e.type IN ('input_required', 'input_resolved', 'approval_required', 'approval_resolved')
		ORDER BY e.tenant, e.session_id, e.seq`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			s   sess
			seq int64
			raw string
		)
		if err := rows.Scan(&s.tenant, &s.id, &seq, &raw); err != nil {
			rows.Close()
			return err
		}
		ev := new(session.Event)
		if err := json.Unmarshal([]byte(raw), ev); err != nil {
			rows.Close()
			return fmt.Errorf("session %q event %d: undecodable row: %w", s.id, seq, err)
		}
		if _, ok := logs[s]; !ok {
			order = append(order, s)
		}
		logs[s] = append(logs[s], ev)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range order {
		pending, err := reqindex.Pending(logs[s])
		if err != nil {
			return fmt.Errorf("session %q: %w", s.id, err)
		}
		for _, r := range pending {
			if _, err := tx.Exec(ctx, `INSERT INTO requests (tenant, session_id, request_id, seq, agent, kind, asked, expires, data)
				SELECT $1, $2, $3, $4, coalesce(nullif($5, ''), s.agent), $6, $7, $8, $9 FROM sessions s WHERE s.tenant = $1 AND s.id = $2`,
				s.tenant, s.id, r.RequestID, r.Seq, r.Agent, r.Kind, r.Asked, r.Expires, string(r.Data)); err != nil {
				return fmt.Errorf("session %q: request %q: %w", s.id, r.RequestID, err)
			}
		}
	}
	return nil
}

// requestColumns are the columns a pending request is read from.
const requestColumns = `tenant, session_id, agent, seq, asked, data`

// args numbers the arguments of a query as they are added.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// PendingRequests returns the context tenant's pending requests, oldest
// first, through requests_asked. See session.RequestIndex.
func (st *Store) PendingRequests(ctx context.Context, opt session.RequestListOptions) ([]session.PendingRequest, error) {
	q, a := pendingRequestsQuery(session.TenantOf(ctx), opt)
	return st.requests(ctx, "pending requests", q, a...)
}

// pendingRequestsQuery is PendingRequests' query and its arguments.
func pendingRequestsQuery(tenant string, opt session.RequestListOptions) (string, []any) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	var a args
	q := `SELECT ` + requestColumns + ` FROM requests WHERE tenant = ` + a.add(tenant)
	if opt.SessionID != "" {
		q += ` AND session_id = ` + a.add(opt.SessionID)
	}
	if opt.Agent != "" {
		q += ` AND agent = ` + a.add(opt.Agent)
	}
	if opt.Kind != "" {
		q += ` AND kind = ` + a.add(string(opt.Kind))
	}
	if c := opt.After; !c.IsZero() {
		q += fmt.Sprintf(` AND (asked, session_id, seq) > (%s, %s, %s)`, a.add(c.Asked.UnixMicro()), a.add(c.SessionID), a.add(c.Seq))
	}
	return q + ` ORDER BY asked, session_id, seq LIMIT ` + a.add(limit), a
}

// ExpiredRequests returns the requests of every tenant whose deadline is
// at or before now, through requests_expires. See session.RequestIndex.
func (st *Store) ExpiredRequests(ctx context.Context, now time.Time, after *session.PendingRequest, limit int) ([]session.PendingRequest, error) {
	q, a, err := expiredRequestsQuery(now, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return st.requests(ctx, "expired requests", q, a...)
}

// expiredRequestsQuery is ExpiredRequests' query and its arguments.
func expiredRequestsQuery(now time.Time, after *session.PendingRequest, limit int) (string, []any, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var a args
	// The rows' deadlines are rounded up; now, down.
	q := `SELECT ` + requestColumns + ` FROM requests WHERE expires IS NOT NULL AND expires <= ` + a.add(now.UnixMicro())
	if after != nil {
		if after.Request.Expires == nil {
			return "", nil, fmt.Errorf("expired requests: the cursor, request %q of session %q, has no deadline", after.Request.RequestID, after.SessionID)
		}
		q += fmt.Sprintf(` AND (expires, tenant, session_id, seq) > (%s, %s, %s, %s)`,
			a.add(reqindex.CeilMicro(*after.Request.Expires)), a.add(after.Tenant), a.add(after.SessionID), a.add(after.Seq))
	}
	return q + ` ORDER BY expires, tenant, session_id, seq LIMIT ` + a.add(limit), a, nil
}

// requests runs a query of requestColumns.
func (st *Store) requests(ctx context.Context, what, query string, a ...any) ([]session.PendingRequest, error) {
	rows, err := st.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	defer rows.Close()
	var out []session.PendingRequest
	for rows.Next() {
		var (
			tenant, id, agent, data string
			seq, asked              int64
		)
		if err := rows.Scan(&tenant, &id, &agent, &seq, &asked, &data); err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", what, err)
		}
		p, err := reqindex.Decode(tenant, id, agent, seq, asked, []byte(data))
		if err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", what, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return out, nil
}

// ExpiredLeases returns the running sessions of every tenant whose lease
// expired, or that have none, through sessions_leases. See
// session.LeaseIndex.
func (st *Store) ExpiredLeases(ctx context.Context, after *session.Session, limit int) ([]*session.Session, error) {
	q, a := expiredLeasesQuery(st.now(), after, limit)
	return st.sessionsOf(ctx, "expired leases", q, a...)
}

// expiredLeasesQuery is ExpiredLeases' query, by the leases' clock now,
// and its arguments.
func expiredLeasesQuery(now time.Time, after *session.Session, limit int) (string, []any) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var a args
	q := `SELECT ` + selectColumns + ` FROM sessions WHERE status = 'running' AND lease_expires <= ` + a.add(now.UnixMicro())
	if after != nil {
		var expires int64 // none held: 0, as the table keeps it
		if after.Lease != nil {
			expires = after.Lease.Expires.UnixMicro()
		}
		q += fmt.Sprintf(` AND (lease_expires, tenant, id) > (%s, %s, %s)`, a.add(expires), a.add(after.Tenant), a.add(after.ID))
	}
	return q + ` ORDER BY lease_expires, tenant, id LIMIT ` + a.add(limit), a
}

// LeaseOwners returns the owners of the running sessions' leases whose
// names begin with ownerPrefix, through sessions_owners. See
// session.LeaseIndex.
func (st *Store) LeaseOwners(ctx context.Context, ownerPrefix string) ([]string, error) {
	if ownerPrefix == "" {
		return nil, fmt.Errorf("postgres: lease owners: the owner prefix is empty")
	}
	q, a := leaseOwnersQuery(ownerPrefix)
	rows, err := st.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("postgres: lease owners %q: %w", ownerPrefix, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: lease owners %q: %w", ownerPrefix, err)
	}
	return out, nil
}

// ownerC is the owner in the order of its bytes (sessions_owners'), in
// which the owners that begin with a prefix are one range whatever the
// database's collation.
const ownerC = `(lease_owner COLLATE "C")`

// leaseOwnersQuery is LeaseOwners' query and its arguments: each next
// owner is one seek into the index past the one before, however many
// sessions each holds.
func leaseOwnersQuery(ownerPrefix string) (string, []any) {
	a := args{ownerPrefix}
	bound := ""
	if end := reqindex.PrefixEnd(ownerPrefix); end != "" {
		bound = ` AND ` + ownerC + ` < ` + a.add(end)
	}
	next := func(from string) string {
		return `(SELECT ` + ownerC + ` FROM sessions WHERE status = 'running' AND lease_owner IS NOT NULL AND ` + ownerC + ` ` + from + bound +
			` ORDER BY ` + ownerC + ` LIMIT 1)`
	}
	return `WITH RECURSIVE o(owner) AS (SELECT ` + next(`>= $1`) + `
		UNION ALL SELECT ` + next(`> o.owner`) + ` FROM o WHERE o.owner IS NOT NULL)
		SELECT owner FROM o WHERE owner IS NOT NULL`, a
}

// LeasedTo returns the running sessions of every tenant leased to owner,
// through sessions_owners. See session.LeaseIndex.
func (st *Store) LeasedTo(ctx context.Context, owner string, after *session.Session, limit int) ([]*session.Session, error) {
	q, a := leasedToQuery(owner, after, limit)
	return st.sessionsOf(ctx, "sessions leased to "+owner, q, a...)
}

// leasedToQuery is LeasedTo's query and its arguments.
func leasedToQuery(owner string, after *session.Session, limit int) (string, []any) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var a args
	q := `SELECT ` + selectColumns + ` FROM sessions WHERE status = 'running' AND lease_owner IS NOT NULL AND ` + ownerC + ` = ` + a.add(owner)
	if after != nil {
		q += fmt.Sprintf(` AND (tenant, id) > (%s, %s)`, a.add(after.Tenant), a.add(after.ID))
	}
	return q + ` ORDER BY tenant, id LIMIT ` + a.add(limit), a
}

// sessionsOf runs a query of selectColumns.
func (st *Store) sessionsOf(ctx context.Context, what, query string, a ...any) ([]*session.Session, error) {
	rows, err := st.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	defer rows.Close()
	var out []*session.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", what, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return out, nil
}

// CountRequests returns how many requests of every tenant are pending.
// See session.RequestIndex.
func (st *Store) CountRequests(ctx context.Context) (int64, error) {
	var n int64
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM requests`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count requests: %w", err)
	}
	return n, nil
}
