// Package memstore is an in-memory session.Store, for tests and for runs
// that need no durability. It passes the storetest suite.
//
// Everything is lost when the process exits. Commits are cheap: a commit
// appends the caller's *Event pointers to the session's log and copies only
// the snapshot bytes, into a buffer the session reuses.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/reqindex"
)

const (
	// defaultLimit is ListSessions' page size when the caller gives none.
	defaultLimit = 50
	// minLogGrowth is the fewest events a session's log grows by when full.
	minLogGrowth = 32
)

// Store is an in-memory session.Store. The zero value is not ready to use;
// call New.
//
// All methods are safe for concurrent use. One mutex guards every session;
// no method calls out to caller code while holding it (Events yields
// without it).
//
// Ownership: Commit keeps the *Event values it is given and Events yields
// those same pointers, so callers must not mutate an event after passing it
// to Commit, nor an event Events yields. Sessions and snapshots are copied
// in and out, Metadata maps and snapshot bytes included.
type Store struct {
	now func() time.Time // the clock of leases

	// maxSessions bounds the sessions kept (WithMaxSessions); zero: no
	// bound. evicted counts the sessions forgotten to keep it, and
	// onEvict hears of each eviction.
	maxSessions int
	evicted     atomic.Int64
	onEvict     func(n, kept int)

	mu       sync.Mutex
	sessions map[key]*entry // guarded by mu; by tenant and id
	// last is the entry of the session committed to last, also guarded by
	// mu: a run commits to one session a dozen times in a row, and with
	// many sessions the map lookup is the dearest part of a commit.
	last *entry
	// controlled are the sessions with a control request, guarded by mu:
	// what Controls looks through.
	controlled map[key]*entry
	// inbox holds the inputs (session.Inbox), guarded by mu.
	inbox inbox
	// requests are the pending requests (session.RequestIndex), and
	// runningSet the sessions whose status is running, which
	// session.LeaseIndex looks through; both guarded by mu.
	requests   requests
	runningSet map[key]*entry
	// outbox holds the messages owed (session.Outbox), guarded by mu.
	outbox outbox
	// blobs are the blobs kept (session.Blobs), by tenant and hash,
	// guarded by mu.
	blobs map[key]*blob
}

// key names a session: its tenant and its id.
type key struct{ tenant, id string }

func keyOf(ctx context.Context, id string) key { return key{session.TenantOf(ctx), id} }

// entry is one session. All its fields are guarded by Store.mu.
type entry struct {
	row session.Session
	// log holds the events in seq order: log[i].Seq == i+1. It is only
	// appended to, which is what lets Events read a prefix of it without
	// the lock.
	log []*session.Event
	// snap is the latest snapshot; hasSnap says whether there is one. Its
	// Data is the store's own buffer, overwritten in place by the next
	// snapshot and copied out by LoadSnapshot.
	snap    session.Snapshot
	hasSnap bool
	// lease is the session's lease; its Owner is empty when none is held.
	// Its Token is kept after a release: the next owner gets Token+1.
	lease session.Lease
	// control is the control request kept for the lease's owner (see
	// session.Controller); nil when there is none.
	control *session.Control
	// wake, when not nil, is closed by the next commit or delete: Follow
	// makes it when it has read everything and waits.
	wake chan struct{}
	// records are the session's records (session.Records), which go
	// with it.
	records map[recordKey]*session.Record
}

var (
	_ session.Store      = (*Store)(nil)
	_ session.Leaser     = (*Store)(nil)
	_ session.Dropper    = (*Store)(nil)
	_ session.Follower   = (*Store)(nil)
	_ session.Controller = (*Store)(nil)
	_ session.Inbox      = (*Store)(nil)
)

// An Option configures New.
type Option func(*Store)

// WithClock makes the store read the time from now (for leases' expiry),
// so that tests control it.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithMaxSessions bounds the sessions the store keeps to n: a session
// created past it first makes the store forget its oldest finished
// sessions (by last update: status done, failed, canceled or idle, no
// lease held, no request waiting for a person), a tenth of n at once so
// that the cost of looking is shared among the creates that follow.
// Sessions that are running, waiting for a person or paused are never
// forgotten; when every session is one of those the store goes past n.
// Hidden sessions (the gateway's claims) count too. onEvict, when not
// nil, hears how many were forgotten and how many are kept; Evicted
// counts them all.
func WithMaxSessions(n int, onEvict func(forgotten, kept int)) Option {
	return func(s *Store) { s.maxSessions, s.onEvict = max(n, 0), onEvict }
}

// OnEvict sets the function that hears of evictions (see
// WithMaxSessions), for a caller that did not make the store.
func (st *Store) OnEvict(fn func(forgotten, kept int)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.onEvict = fn
}

// MaxSessions is the bound of WithMaxSessions; zero: none.
func (st *Store) MaxSessions() int { return st.maxSessions }

// Evicted is how many sessions the store has forgotten to stay within
// WithMaxSessions.
func (st *Store) Evicted() int64 { return st.evicted.Load() }

// Sessions is how many sessions the store keeps, of every tenant.
func (st *Store) Sessions() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sessions)
}

// evictLocked makes room for one more session when the store keeps
// maxSessions: it forgets the oldest finished sessions, down to nine
// tenths of the bound. It returns how many it forgot. st.mu is held.
func (st *Store) evictLocked() int {
	if st.maxSessions == 0 || len(st.sessions) < st.maxSessions {
		return 0
	}
	type cand struct {
		k  key
		at time.Time
	}
	var cands []cand
	now := st.now()
	for k, e := range st.sessions {
		if !evictable(e, now) {
			continue
		}
		cands = append(cands, cand{k, e.row.UpdatedAt})
	}
	slices.SortFunc(cands, func(a, b cand) int { return a.at.Compare(b.at) })
	n := min(len(cands), len(st.sessions)-st.maxSessions*9/10+1)
	for _, c := range cands[:n] {
		st.forgetLocked(c.k, st.sessions[c.k])
	}
	st.evicted.Add(int64(n))
	return n
}

// evictable reports whether e may be forgotten: it has ended, no lease
// is held, and nobody is asked anything.
func evictable(e *entry, now time.Time) bool {
	switch e.row.Status {
	case session.StatusRunning, session.StatusWaiting, session.StatusPaused:
		return false
	}
	if e.lease.Owner != "" && now.Before(e.lease.Expires) {
		return false
	}
	return e.control == nil
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{sessions: make(map[key]*entry), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// CreateSession stores a copy of s. LastSeq is ignored: a new session has
// no events. A zero CreatedAt becomes the current time, and a zero
// UpdatedAt becomes CreatedAt.
func (st *Store) CreateSession(ctx context.Context, s *session.Session) error {
	return st.create(ctx, s, session.Lease{})
}

// CreateOrAcquire gives owner the lease of session s.ID, creating it if
// need be. See session.LeasedCreator.
func (st *Store) CreateOrAcquire(ctx context.Context, s *session.Session, owner string, ttl time.Duration) (*session.Session, session.Lease, bool, error) {
	return session.CreateThenAcquire(ctx, st, "memstore", st.create, st.now(), s, owner, ttl)
}

// create stores s with lease l (none if l has no owner).
func (st *Store) create(ctx context.Context, s *session.Session, l session.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.ID == "" {
		return errors.New("memstore: create session: empty id")
	}
	row := *s
	row.Tenant = session.TenantOf(ctx)
	if s.Tenant != "" && s.Tenant != row.Tenant {
		return fmt.Errorf("memstore: create session %q: its tenant %q is not the context's %q", s.ID, s.Tenant, row.Tenant)
	}
	row.LastSeq = 0
	row.Metadata = maps.Clone(s.Metadata)
	if row.CreatedAt.IsZero() {
		row.CreatedAt = time.Now()
	}
	if row.UpdatedAt.IsZero() {
		row.UpdatedAt = row.CreatedAt
	}

	k := key{row.Tenant, s.ID}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.sessions[k]; ok {
		return fmt.Errorf("memstore: create session %q: %w", s.ID, session.ErrExists)
	}
	forgot := st.evictLocked()
	e := &entry{row: row, lease: l}
	e.row.Status = ""
	st.setStatus(e, row.Status)
	st.sessions[k] = e
	s.Tenant = row.Tenant
	if fn := st.onEvict; forgot > 0 && fn != nil {
		kept := len(st.sessions)
		defer fn(forgot, kept) // after the unlock: it may log
	}
	return nil
}

// GetSession returns a copy of the session's row.
func (st *Store) GetSession(ctx context.Context, id string) (*session.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, id)]
	if !ok {
		return nil, notFound("get session", id)
	}
	return e.copyRow(), nil
}

// ListSessions returns copies of the sessions, newest first: by CreatedAt,
// then by ID, both descending. It sorts every session on each call, which
// is fine for the store's intended sizes.
func (st *Store) ListSessions(ctx context.Context, opt session.ListOptions) ([]*session.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultLimit
	}

	tenant := session.TenantOf(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	all := make([]*entry, 0, len(st.sessions))
	for _, e := range st.sessions {
		if (opt.AllTenants || e.row.Tenant == tenant) && (opt.Status == "" || e.row.Status == opt.Status) && (opt.Agent == "" || e.row.Agent == opt.Agent) &&
			!(opt.SkipHidden && session.Hidden(e.row.ID)) {
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b *entry) int { return newerFirst(&a.row, &b.row) })
	if opt.After != "" {
		k := key{tenant, opt.After}
		if opt.AllTenants {
			k.tenant = cmp.Or(opt.AfterTenant, session.DefaultTenant)
		}
		cursor := &session.Session{Tenant: k.tenant, ID: opt.After, CreatedAt: opt.AfterCreated}
		if opt.AfterCreated.IsZero() {
			e, ok := st.sessions[k]
			if !ok {
				return nil, notFound("list sessions after", opt.After)
			}
			cursor = &e.row
		}
		// The first session that sorts after the cursor (which the
		// status filter may have left out, or which is gone).
		i, _ := slices.BinarySearchFunc(all, cursor, func(e *entry, c *session.Session) int {
			if newerFirst(&e.row, c) <= 0 {
				return -1
			}
			return 1
		})
		all = all[i:]
	}
	out := make([]*session.Session, 0, min(limit, len(all)))
	for _, e := range all[:min(limit, len(all))] {
		out = append(out, e.copyRow())
	}
	return out, nil
}

// newerFirst orders sessions by CreatedAt, then tenant, then ID, all
// descending.
func newerFirst(a, b *session.Session) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Tenant, a.Tenant); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// DeleteSession removes a session, its events and its snapshot. Iterations
// of Events already under way finish with the events they started with.
func (st *Store) DeleteSession(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := keyOf(ctx, id)
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[k]
	if !ok {
		return notFound("delete session", id)
	}
	st.forgetLocked(k, e)
	return nil
}

// forgetLocked removes session e, of key k. st.mu is held.
func (st *Store) forgetLocked(k key, e *entry) {
	e.wakeFollowers()
	delete(st.sessions, k)
	delete(st.controlled, k)
	delete(st.requests, k)
	delete(st.runningSet, k)
	st.outbox.forget(k)
	if st.last == e {
		st.last = nil // a commit to the deleted session must not find it
	}
}

// Commit appends c.Events, keeping the pointers, and updates the session
// row; a non-nil c.Snapshot's bytes are copied. A zero c.Time means now.
// Nothing is changed unless every check passes.
func (st *Store) Commit(ctx context.Context, c *session.Commit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	last := c.ExpectSeq + int64(len(c.Events))
	if err := c.Check(); err != nil {
		return fmt.Errorf("memstore: commit to session %q: %w", c.SessionID, err)
	}
	asked, resolved, err := reqindex.Changes(c.Events)
	if err != nil {
		return fmt.Errorf("memstore: commit to session %q: %w", c.SessionID, err)
	}
	now := c.Time
	if now.IsZero() {
		now = time.Now()
	}

	tenant := session.TenantOf(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.last
	if e == nil || e.row.ID != c.SessionID || e.row.Tenant != tenant {
		var ok bool
		if e, ok = st.sessions[key{tenant, c.SessionID}]; !ok {
			return notFound("commit to session", c.SessionID)
		}
		st.last = e
	}
	// The fence first: a writer that lost the session must hear so, not
	// that it should reload and try again.
	if err := st.fenced(e, c.Fence); err != nil {
		return fmt.Errorf("memstore: commit to session %q: %w", c.SessionID, err)
	}
	if e.row.LastSeq != c.ExpectSeq {
		return fmt.Errorf("memstore: commit to session %q: expected seq %d, session is at %d: %w",
			c.SessionID, c.ExpectSeq, e.row.LastSeq, session.ErrConflict)
	}
	if err := st.inbox.answerable(tenant, c.Answers); err != nil {
		return fmt.Errorf("memstore: commit to session %q: %w", c.SessionID, err)
	}
	st.inbox.answer(tenant, c.Answers, c.RunID)
	st.outbox.add(tenant, c, now)
	if len(e.log)+len(c.Events) > cap(e.log) {
		// Grow by at least a turn's worth of events: a run commits a few
		// events at a time, and appending them one commit at a time would
		// reallocate the log at 1, 2, 4, 8 and 16 events.
		e.log = slices.Grow(e.log, max(len(c.Events), minLogGrowth))
	}
	e.log = append(e.log, c.Events...)
	if len(asked) > 0 || len(resolved) > 0 {
		st.requests.apply(e, asked, resolved)
	}
	st.setStatus(e, c.Status)
	e.row.Turn = c.Turn
	e.row.Usage = c.Usage
	e.row.LastSeq = last
	e.row.UpdatedAt = now
	if c.Release && c.Fence != 0 {
		e.lease.Owner, e.lease.Expires = "", time.Time{}
		st.setControl(e, nil)
	}
	if c.Snapshot != nil {
		// Readers only ever see copies of e.snap.Data, so its buffer can
		// be reused.
		e.snap.Seq = c.Snapshot.Seq
		e.snap.Data = append(e.snap.Data[:0], c.Snapshot.Data...)
		e.hasSnap = true
	}
	if len(c.Events) > 0 {
		e.wakeFollowers()
	}
	return nil
}

// fenced reports whether a commit with fence token t may not write: t is
// not the session's token, or t is zero while an owner holds a live
// lease. The caller holds st.mu.
func (st *Store) fenced(e *entry, t int64) error {
	switch {
	case t != 0 && t != e.lease.Token:
		return fmt.Errorf("fence token %d, session's is %d: %w", t, e.lease.Token, session.ErrFenced)
	case t == 0 && e.lease.Owner != "" && st.now().Before(e.lease.Expires):
		return fmt.Errorf("no fence token, and %s holds a live lease: %w", e.lease.Owner, session.ErrFenced)
	}
	return nil
}

// wakeFollowers wakes the Follow calls waiting for e's next event. The
// caller holds st.mu.
func (e *entry) wakeFollowers() {
	if e.wake != nil {
		close(e.wake)
		e.wake = nil
	}
}

// LoadSnapshot returns a copy of the session's latest snapshot, or nil if
// it has none.
func (st *Store) LoadSnapshot(ctx context.Context, id string) (*session.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, id)]
	if !ok {
		return nil, notFound("load snapshot of", id)
	}
	if !e.hasSnap {
		return nil, nil
	}
	return &session.Snapshot{Seq: e.snap.Seq, Data: slices.Clone(e.snap.Data)}, nil
}

// Events yields the session's events with seq > after, as they were when
// the iteration began: the events committed while it runs are not
// included. It yields the pointers given to Commit; do not mutate them.
// The only errors are a canceled context and ErrNotFound, each yielded
// alone.
func (st *Store) Events(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		st.mu.Lock()
		e, ok := st.sessions[keyOf(ctx, id)]
		var log []*session.Event
		if ok {
			// The log is append-only: elements below len never change, so
			// this slice header stays valid without the lock.
			log = e.log[min(max(after, 0), int64(len(e.log))):]
		}
		st.mu.Unlock()
		if !ok {
			yield(nil, notFound("events of", id))
			return
		}
		for _, ev := range log {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// Follow yields the session's events after after, then each one as it is
// committed, until ctx ends. See session.Follower.
func (st *Store) Follow(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		last := max(after, 0)
		for {
			if ctx.Err() != nil {
				return
			}
			st.mu.Lock()
			e, ok := st.sessions[keyOf(ctx, id)]
			var log []*session.Event
			var wake chan struct{}
			if ok {
				log = e.log[min(last, int64(len(e.log))):]
				if len(log) == 0 {
					if e.wake == nil {
						e.wake = make(chan struct{})
					}
					wake = e.wake
				}
			}
			st.mu.Unlock()
			if !ok {
				yield(nil, notFound("follow", id))
				return
			}
			for _, ev := range log {
				if !yield(ev, nil) {
					return
				}
				last = ev.Seq
			}
			if wake != nil {
				select {
				case <-wake:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// Acquire gives owner the session's lease. See session.Leaser.
func (st *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	if err := ctx.Err(); err != nil {
		return session.Lease{}, err
	}
	if owner == "" || ttl <= 0 {
		return session.Lease{}, fmt.Errorf("memstore: acquire %q: need an owner and a positive ttl", id)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, id)]
	if !ok {
		return session.Lease{}, notFound("acquire", id)
	}
	e.lease.SessionID = id
	l, err := e.lease.Take(owner, st.now(), ttl)
	if err != nil {
		return session.Lease{}, fmt.Errorf("memstore: acquire: %w", err)
	}
	e.lease = l
	return l, nil
}

// Renew extends l. See session.Leaser.
func (st *Store) Renew(ctx context.Context, l session.Lease, ttl time.Duration) (session.Lease, error) {
	if err := ctx.Err(); err != nil {
		return session.Lease{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, l.SessionID)]
	if !ok {
		return session.Lease{}, notFound("renew lease of", l.SessionID)
	}
	if e.lease.Token != l.Token || e.lease.Owner == "" || e.lease.Owner != l.Owner {
		return session.Lease{}, fmt.Errorf("memstore: renew lease of %q: token %d of %s, session's is %d of %s: %w",
			l.SessionID, l.Token, l.Owner, e.lease.Token, e.lease.Owner, session.ErrFenced)
	}
	e.lease.Expires = st.now().Add(ttl).Truncate(time.Microsecond) // as Acquire (session.Lease.Take)
	return e.lease, nil
}

// Release ends l. See session.Leaser.
func (st *Store) Release(ctx context.Context, l session.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, l.SessionID)]
	if !ok {
		return notFound("release lease of", l.SessionID)
	}
	if e.lease.Token != l.Token || e.lease.Owner == "" || e.lease.Owner != l.Owner {
		return fmt.Errorf("memstore: release lease of %q: token %d of %s, session's is %d of %s: %w",
			l.SessionID, l.Token, l.Owner, e.lease.Token, e.lease.Owner, session.ErrFenced)
	}
	e.lease.Owner, e.lease.Expires = "", time.Time{}
	st.setControl(e, nil)
	return nil
}

// Drop deletes the session whose lease l is. See session.Dropper.
func (st *Store) Drop(ctx context.Context, l session.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := keyOf(ctx, l.SessionID)
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[k]
	switch {
	case !ok:
		return notFound("drop", l.SessionID)
	case e.lease.Token != l.Token || e.lease.Owner == "" || e.lease.Owner != l.Owner:
		return fmt.Errorf("memstore: drop %q: token %d of %s, session's is %d of %s: %w",
			l.SessionID, l.Token, l.Owner, e.lease.Token, e.lease.Owner, session.ErrFenced)
	case e.row.LastSeq > 0:
		return fmt.Errorf("memstore: drop %q: it holds events: %w", l.SessionID, session.ErrConflict)
	}
	e.wakeFollowers()
	delete(st.sessions, k)
	delete(st.controlled, k)
	delete(st.requests, k)
	delete(st.runningSet, k)
	if st.last == e {
		st.last = nil
	}
	return nil
}

// RequestControl keeps c for the owner of l. See session.Controller.
func (st *Store) RequestControl(ctx context.Context, id string, l session.Lease, c session.Control) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.sessions[keyOf(ctx, id)]
	if !ok {
		return notFound("request control of", id)
	}
	if e.lease.Owner == "" || e.lease.Owner != l.Owner || e.lease.Token != l.Token {
		return fmt.Errorf("memstore: request control of %q: its lease is no longer %s's (token %d): %w", id, l.Owner, l.Token, session.ErrFenced)
	}
	if c.Kind == session.ControlSteer && e.control != nil && e.control.Kind != session.ControlSteer {
		return nil // a stop is kept: it stays
	}
	st.setControl(e, &c)
	return nil
}

// setControl sets e's control request (nil: none). The caller holds mu.
func (st *Store) setControl(e *entry, c *session.Control) {
	if e.control == nil && c == nil {
		return
	}
	e.control = c
	k := key{e.row.Tenant, e.row.ID}
	if c == nil {
		delete(st.controlled, k)
		return
	}
	if st.controlled == nil {
		st.controlled = make(map[key]*entry)
	}
	st.controlled[k] = e
}

// Controls returns the control requests kept for owner. See
// session.Controller.
func (st *Store) Controls(ctx context.Context, owner string) ([]session.SessionControl, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []session.SessionControl
	for k, e := range st.controlled {
		if e.lease.Owner == owner {
			out = append(out, session.SessionControl{Tenant: k.tenant, SessionID: k.id, Control: *e.control})
		}
	}
	return out, nil
}

// Close does nothing: an in-memory store holds no resources. The store
// stays usable.
func (st *Store) Close() error { return nil }

// copyRow returns a copy of e's row that shares no memory with the store.
// The caller holds Store.mu.
func (e *entry) copyRow() *session.Session {
	s := e.row
	s.Metadata = maps.Clone(e.row.Metadata)
	if e.lease.Owner != "" {
		l := e.lease
		s.Lease = &l
	}
	if e.control != nil {
		c := *e.control
		s.Control = &c
	}
	return &s
}

func notFound(op, id string) error {
	return fmt.Errorf("memstore: %s %q: %w", op, id, session.ErrNotFound)
}
