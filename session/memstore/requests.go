package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/reqindex"
)

var (
	_ session.RequestIndex = (*Store)(nil)
	_ session.LeaseIndex   = (*Store)(nil)
)

// requests are the pending requests (session.RequestIndex), by session
// (tenant and id), then request id. The Store's mu guards them. A listing
// sorts the requests it keeps, which is fine for the store's intended
// sizes.
type requests map[key]map[string]*request

// request is a pending request as the store keeps it: its row (the
// request's JSON, decoded afresh for each caller, who gets a copy) and
// the agent that asked.
type request struct {
	reqindex.Row
	agent string
}

// apply records what a commit's events do to e's pending requests.
func (rs *requests) apply(e *entry, asked []reqindex.Row, resolved []string) {
	k := key{e.row.Tenant, e.row.ID}
	m := (*rs)[k]
	for _, id := range resolved {
		delete(m, id)
	}
	if len(asked) > 0 && m == nil {
		if *rs == nil {
			*rs = make(requests)
		}
		m = make(map[string]*request)
		(*rs)[k] = m
	}
	for _, r := range asked {
		m[r.RequestID] = &request{Row: r, agent: cmp.Or(r.Agent, e.row.Agent)}
	}
	if len(m) == 0 {
		delete(*rs, k)
	}
}

// pending returns the request as a caller gets it.
func (r *request) pending(k key) (session.PendingRequest, error) {
	return reqindex.Decode(k.tenant, k.id, r.agent, r.Seq, r.Asked, r.Data)
}

// listed is a request and its session, for sorting.
type listed struct {
	k key
	r *request
}

// PendingRequests returns the context tenant's pending requests, oldest
// first. See session.RequestIndex.
func (st *Store) PendingRequests(ctx context.Context, opt session.RequestListOptions) ([]session.PendingRequest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	tenant := session.TenantOf(ctx)
	after := opt.After
	st.mu.Lock()
	var all []listed
	for k, m := range st.requests {
		if k.tenant != tenant || opt.SessionID != "" && k.id != opt.SessionID {
			continue
		}
		for _, r := range m {
			if opt.Agent != "" && r.agent != opt.Agent || opt.Kind != "" && r.Kind != string(opt.Kind) {
				continue
			}
			if !after.IsZero() && compareAsked(k, r, after) <= 0 {
				continue
			}
			all = append(all, listed{k, r})
		}
	}
	st.mu.Unlock()
	slices.SortFunc(all, func(a, b listed) int {
		return cmp.Or(cmp.Compare(a.r.Asked, b.r.Asked), strings.Compare(a.k.id, b.k.id), cmp.Compare(a.r.Seq, b.r.Seq))
	})
	return decodeAll(all[:min(limit, len(all))])
}

// compareAsked compares a request to a cursor, in the order of
// PendingRequests.
func compareAsked(k key, r *request, c session.RequestCursor) int {
	return cmp.Or(cmp.Compare(r.Asked, c.Asked.UnixMicro()), strings.Compare(k.id, c.SessionID), cmp.Compare(r.Seq, c.Seq))
}

// ExpiredRequests returns the requests of every tenant whose deadline
// is at or before now. See session.RequestIndex.
func (st *Store) ExpiredRequests(ctx context.Context, now time.Time, after *session.PendingRequest, limit int) ([]session.PendingRequest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = defaultLimit
	}
	// The rows' deadlines are rounded up; the time they are compared to,
	// down (see reqindex.Row).
	cut := now.UnixMicro()
	var from *listed
	if after != nil {
		if after.Request.Expires == nil {
			return nil, fmt.Errorf("memstore: expired requests: the cursor, request %q of session %q, has no deadline", after.Request.RequestID, after.SessionID)
		}
		e := reqindex.CeilMicro(*after.Request.Expires)
		from = &listed{key{after.Tenant, after.SessionID}, &request{Row: reqindex.Row{Seq: after.Seq, Expires: &e}}}
	}
	byExpiry := func(a, b listed) int {
		return cmp.Or(cmp.Compare(*a.r.Expires, *b.r.Expires), strings.Compare(a.k.tenant, b.k.tenant),
			strings.Compare(a.k.id, b.k.id), cmp.Compare(a.r.Seq, b.r.Seq))
	}
	st.mu.Lock()
	var all []listed
	for k, m := range st.requests {
		for _, r := range m {
			if r.Expires == nil || *r.Expires > cut {
				continue
			}
			if l := (listed{k, r}); from == nil || byExpiry(l, *from) > 0 {
				all = append(all, l)
			}
		}
	}
	st.mu.Unlock()
	slices.SortFunc(all, byExpiry)
	return decodeAll(all[:min(limit, len(all))])
}

// decodeAll decodes the rows of a listing, without the lock: they are
// never changed once stored (a request asked again is a new row).
func decodeAll(ls []listed) ([]session.PendingRequest, error) {
	out := make([]session.PendingRequest, 0, len(ls))
	for _, l := range ls {
		p, err := l.r.pending(l.k)
		if err != nil {
			return nil, fmt.Errorf("memstore: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// leaseExpiry is the moment e's lease expired or expires, in unix
// microseconds: 0 for a session that has none, as the SQL stores keep
// it.
func (e *entry) leaseExpiry() int64 {
	if e.lease.Owner == "" {
		return 0
	}
	return e.lease.Expires.UnixMicro()
}

// ExpiredLeases returns the running sessions of every tenant whose lease
// expired, or that have none. See session.LeaseIndex.
func (st *Store) ExpiredLeases(ctx context.Context, after *session.Session, limit int) ([]*session.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := st.now().UnixMicro()
	order := func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.leaseExpiry(), b.leaseExpiry()), strings.Compare(a.row.Tenant, b.row.Tenant), strings.Compare(a.row.ID, b.row.ID))
	}
	var from func(e *entry) bool
	if after != nil {
		c := &entry{row: session.Session{Tenant: after.Tenant, ID: after.ID}}
		if after.Lease != nil {
			c.lease.Owner, c.lease.Expires = "cursor", after.Lease.Expires
		}
		from = func(e *entry) bool { return order(e, c) > 0 }
	}
	return st.running(func(e *entry) bool { return e.leaseExpiry() <= now && (from == nil || from(e)) }, order, limit)
}

// LeaseOwners returns the owners of the running sessions' leases whose
// names begin with ownerPrefix. See session.LeaseIndex.
func (st *Store) LeaseOwners(ctx context.Context, ownerPrefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ownerPrefix == "" {
		return nil, fmt.Errorf("memstore: lease owners: the owner prefix is empty")
	}
	st.mu.Lock()
	var out []string
	for _, e := range st.runningSet {
		if o := e.lease.Owner; o != "" && strings.HasPrefix(o, ownerPrefix) {
			out = append(out, o)
		}
	}
	st.mu.Unlock()
	slices.Sort(out)
	return slices.Compact(out), nil
}

// LeasedTo returns the running sessions of every tenant leased to owner.
// See session.LeaseIndex.
func (st *Store) LeasedTo(ctx context.Context, owner string, after *session.Session, limit int) ([]*session.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	order := func(a, b *entry) int {
		return cmp.Or(strings.Compare(a.row.Tenant, b.row.Tenant), strings.Compare(a.row.ID, b.row.ID))
	}
	return st.running(func(e *entry) bool {
		return owner != "" && e.lease.Owner == owner && (after == nil || order(e, &entry{row: session.Session{Tenant: after.Tenant, ID: after.ID}}) > 0)
	}, order, limit)
}

// running returns copies of the running sessions keep keeps, in order,
// at most limit (zero or less: defaultLimit).
func (st *Store) running(keep func(*entry) bool, order func(a, b *entry) int, limit int) ([]*session.Session, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var all []*entry
	for _, e := range st.runningSet {
		if keep(e) {
			all = append(all, e)
		}
	}
	slices.SortFunc(all, order)
	out := make([]*session.Session, 0, min(limit, len(all)))
	for _, e := range all[:min(limit, len(all))] {
		out = append(out, e.copyRow())
	}
	return out, nil
}

// setStatus sets e's status, keeping the set of running sessions. The
// caller holds mu.
func (st *Store) setStatus(e *entry, s session.Status) {
	k := key{e.row.Tenant, e.row.ID}
	switch {
	case s == session.StatusRunning:
		if st.runningSet == nil {
			st.runningSet = make(map[key]*entry)
		}
		st.runningSet[k] = e
	case e.row.Status == session.StatusRunning:
		delete(st.runningSet, k)
	}
	e.row.Status = s
}

// CountRequests returns how many requests of every tenant are pending.
// See session.RequestIndex.
func (st *Store) CountRequests(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var n int64
	for _, m := range st.requests {
		n += int64(len(m))
	}
	return n, nil
}
