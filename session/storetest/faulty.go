package storetest

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
)

// ErrInjected is the error a Faulty store's failing calls return.
var ErrInjected = errors.New("storetest: injected store failure")

// Faults says which calls of a store made by Faulty fail. Calls are
// counted by class from 1: commits (Commit), reads (GetSession,
// ListSessions, LoadSnapshot, Events, Follow, the inbox's
// PendingSources, Pending and Inputs, and the indexes' PendingRequests,
// ExpiredRequests, ExpiredLeases, LeaseOwners and LeasedTo), lease calls (Acquire, Renew,
// Release) and inbox writes (Submit, Refuse). A class fails at its Nth
// call, and at every later one too when told so. The methods are safe for
// concurrent use, so a test can arm a fault while a run is in progress.
type Faults struct {
	mu     sync.Mutex
	counts [numClasses]int  // calls so far; guarded by mu
	at     [numClasses]int  // the failing call, 0 for none; guarded by mu
	after  [numClasses]bool // every later call fails too; guarded by mu
	failed [numClasses]int  // calls that failed; guarded by mu
}

type class int

const (
	commits class = iota
	reads
	leases
	inboxWrites
	recordWrites
	numClasses
)

// FailCommit makes the nth commit from now fail (1 is the next one), and
// every later commit too if following is set. n = 0 disarms.
func (f *Faults) FailCommit(n int, following bool) { f.arm(commits, n, following) }

// FailRead makes the nth read from now fail, and every later one too if
// following is set. n = 0 disarms.
func (f *Faults) FailRead(n int, following bool) { f.arm(reads, n, following) }

// FailLease makes the nth lease call (Acquire, Renew, Release) from now
// fail, and every later one too if following is set. n = 0 disarms.
func (f *Faults) FailLease(n int, following bool) { f.arm(leases, n, following) }

// FailInboxWrite makes the nth inbox write (Submit, Refuse) from now
// fail, and every later one too if following is set. n = 0 disarms.
func (f *Faults) FailInboxWrite(n int, following bool) { f.arm(inboxWrites, n, following) }

// FailRecordWrite makes the nth record write (PutRecord, DeleteRecord)
// from now fail, and every later one too if following is set. n = 0
// disarms. Record reads (SessionRecords, KindRecords) are reads.
func (f *Faults) FailRecordWrite(n int, following bool) { f.arm(recordWrites, n, following) }

func (f *Faults) arm(c class, n int, following bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at[c], f.after[c] = 0, false
	if n > 0 {
		f.at[c], f.after[c] = f.counts[c]+n, following
	}
}

// Commits returns the number of commits attempted so far.
func (f *Faults) Commits() int { return f.count(commits) }

// LeaseCalls returns the number of lease calls (Acquire, Renew, Release)
// attempted so far.
func (f *Faults) LeaseCalls() int { return f.count(leases) }

// InboxWrites returns the number of inbox writes (Submit, Refuse)
// attempted so far.
func (f *Faults) InboxWrites() int { return f.count(inboxWrites) }

// Failed returns the number of calls that failed by injection.
func (f *Faults) Failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.failed {
		n += c
	}
	return n
}

func (f *Faults) count(c class) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[c]
}

// hit counts a call of class c and reports whether it fails.
func (f *Faults) hit(c class) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[c]++
	n := f.counts[c]
	if f.at[c] != 0 && (n == f.at[c] || f.after[c] && n > f.at[c]) {
		f.failed[c]++
		return ErrInjected
	}
	return nil
}

// Faulty wraps s so that its calls fail as f says. The store it returns
// has the optional capabilities (session.Leaser, session.Follower,
// session.Inbox, and session.RequestIndex with session.LeaseIndex) that
// s has, and no others; the two indexes go together, kept when s has
// both (every store of this module does); session.Records is kept when
// s has it and every other capability (as every store of this module
// does); session.Outbox and session.Blobs, likewise, when s has them and
// every other. A
// failing call does nothing and returns an error wrapping ErrInjected;
// Events and Follow yield it as their only value. The outbox's claims and
// settlements are inbox writes, its listing a read.
func Faulty(s session.Store, f *Faults) session.Store {
	fs := faultyStore{s: s, f: f}
	l, isLeaser := s.(session.Leaser)
	fo, isFollower := s.(session.Follower)
	b, isInbox := s.(session.Inbox)
	ri, hasRequests := s.(session.RequestIndex)
	li, hasLeases := s.(session.LeaseIndex)
	rs, hasRecords := s.(session.Records)
	fl, ff, fb := faultyLeaser{l, f}, faultyFollower{fo, f}, faultyInbox{b, f}
	fi := faultyIndex{ri, li, f}
	// Each combination of capabilities is a type of its own: a type
	// assertion must find exactly those of s.
	ob, isOutbox := s.(session.Outbox)
	bl, hasBlobs := s.(session.Blobs)
	if isOutbox && hasBlobs && hasRequests && hasLeases && isLeaser && isFollower && isInbox && hasRecords {
		return struct {
			faultyStore
			faultyLeaser
			faultyFollower
			faultyInbox
			faultyIndex
			faultyRecords
			faultyOutbox
			faultyBlobs
		}{fs, fl, ff, fb, fi, faultyRecords{rs, f}, faultyOutbox{ob, f}, faultyBlobs{bl, f}}
	}
	if hasRequests && hasLeases {
		switch {
		case isLeaser && isFollower && isInbox && hasRecords:
			return struct {
				faultyStore
				faultyLeaser
				faultyFollower
				faultyInbox
				faultyIndex
				faultyRecords
			}{fs, fl, ff, fb, fi, faultyRecords{rs, f}}
		case isLeaser && isFollower && isInbox:
			return struct {
				faultyStore
				faultyLeaser
				faultyFollower
				faultyInbox
				faultyIndex
			}{fs, fl, ff, fb, fi}
		case isLeaser && isFollower:
			return struct {
				faultyStore
				faultyLeaser
				faultyFollower
				faultyIndex
			}{fs, fl, ff, fi}
		case isLeaser && isInbox:
			return struct {
				faultyStore
				faultyLeaser
				faultyInbox
				faultyIndex
			}{fs, fl, fb, fi}
		case isFollower && isInbox:
			return struct {
				faultyStore
				faultyFollower
				faultyInbox
				faultyIndex
			}{fs, ff, fb, fi}
		case isLeaser:
			return struct {
				faultyStore
				faultyLeaser
				faultyIndex
			}{fs, fl, fi}
		case isFollower:
			return struct {
				faultyStore
				faultyFollower
				faultyIndex
			}{fs, ff, fi}
		case isInbox:
			return struct {
				faultyStore
				faultyInbox
				faultyIndex
			}{fs, fb, fi}
		}
		return struct {
			faultyStore
			faultyIndex
		}{fs, fi}
	}
	switch {
	case isLeaser && isFollower && isInbox:
		return struct {
			faultyStore
			faultyLeaser
			faultyFollower
			faultyInbox
		}{fs, fl, ff, fb}
	case isLeaser && isFollower:
		return struct {
			faultyStore
			faultyLeaser
			faultyFollower
		}{fs, fl, ff}
	case isLeaser && isInbox:
		return struct {
			faultyStore
			faultyLeaser
			faultyInbox
		}{fs, fl, fb}
	case isFollower && isInbox:
		return struct {
			faultyStore
			faultyFollower
			faultyInbox
		}{fs, ff, fb}
	case isLeaser:
		return struct {
			faultyStore
			faultyLeaser
		}{fs, fl}
	case isFollower:
		return struct {
			faultyStore
			faultyFollower
		}{fs, ff}
	case isInbox:
		return struct {
			faultyStore
			faultyInbox
		}{fs, fb}
	}
	return fs
}

type faultyStore struct {
	s session.Store
	f *Faults
}

func (fs faultyStore) CreateSession(ctx context.Context, s *session.Session) error {
	return fs.s.CreateSession(ctx, s)
}

func (fs faultyStore) GetSession(ctx context.Context, id string) (*session.Session, error) {
	if err := fs.f.hit(reads); err != nil {
		return nil, err
	}
	return fs.s.GetSession(ctx, id)
}

func (fs faultyStore) ListSessions(ctx context.Context, opt session.ListOptions) ([]*session.Session, error) {
	if err := fs.f.hit(reads); err != nil {
		return nil, err
	}
	return fs.s.ListSessions(ctx, opt)
}

func (fs faultyStore) DeleteSession(ctx context.Context, id string) error {
	return fs.s.DeleteSession(ctx, id)
}

func (fs faultyStore) Commit(ctx context.Context, c *session.Commit) error {
	if err := fs.f.hit(commits); err != nil {
		return err
	}
	return fs.s.Commit(ctx, c)
}

func (fs faultyStore) LoadSnapshot(ctx context.Context, id string) (*session.Snapshot, error) {
	if err := fs.f.hit(reads); err != nil {
		return nil, err
	}
	return fs.s.LoadSnapshot(ctx, id)
}

func (fs faultyStore) Events(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		if err := fs.f.hit(reads); err != nil {
			yield(nil, err)
			return
		}
		for e, err := range fs.s.Events(ctx, id, after) {
			if !yield(e, err) {
				return
			}
		}
	}
}

func (fs faultyStore) Close() error { return fs.s.Close() }

type faultyLeaser struct {
	l session.Leaser
	f *Faults
}

func (fl faultyLeaser) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	if err := fl.f.hit(leases); err != nil {
		return session.Lease{}, err
	}
	return fl.l.Acquire(ctx, id, owner, ttl)
}

func (fl faultyLeaser) Renew(ctx context.Context, l session.Lease, ttl time.Duration) (session.Lease, error) {
	if err := fl.f.hit(leases); err != nil {
		return session.Lease{}, err
	}
	return fl.l.Renew(ctx, l, ttl)
}

func (fl faultyLeaser) Release(ctx context.Context, l session.Lease) error {
	if err := fl.f.hit(leases); err != nil {
		return err
	}
	return fl.l.Release(ctx, l)
}

type faultyFollower struct {
	fo session.Follower
	f  *Faults
}

func (ff faultyFollower) Follow(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		if err := ff.f.hit(reads); err != nil {
			yield(nil, err)
			return
		}
		for e, err := range ff.fo.Follow(ctx, id, after) {
			if !yield(e, err) {
				return
			}
		}
	}
}

type faultyRecords struct {
	r session.Records
	f *Faults
}

func (fr faultyRecords) PutRecord(ctx context.Context, r *session.Record) (int64, error) {
	if err := fr.f.hit(recordWrites); err != nil {
		return 0, err
	}
	return fr.r.PutRecord(ctx, r)
}

func (fr faultyRecords) SessionRecords(ctx context.Context, id, kind, key string) ([]session.Record, error) {
	if err := fr.f.hit(reads); err != nil {
		return nil, err
	}
	return fr.r.SessionRecords(ctx, id, kind, key)
}

func (fr faultyRecords) DeleteRecord(ctx context.Context, id, kind, key, recordID string) error {
	if err := fr.f.hit(recordWrites); err != nil {
		return err
	}
	return fr.r.DeleteRecord(ctx, id, kind, key, recordID)
}

func (fr faultyRecords) KindRecords(ctx context.Context, kind string, limit int) ([]session.Record, error) {
	if err := fr.f.hit(reads); err != nil {
		return nil, err
	}
	return fr.r.KindRecords(ctx, kind, limit)
}

type faultyInbox struct {
	b session.Inbox
	f *Faults
}

func (fb faultyInbox) Submit(ctx context.Context, in *session.InboxInput) (session.InboxInput, bool, error) {
	if err := fb.f.hit(inboxWrites); err != nil {
		return session.InboxInput{}, false, err
	}
	return fb.b.Submit(ctx, in)
}

func (fb faultyInbox) PendingSources(ctx context.Context, limit int) ([]session.SourceState, error) {
	if err := fb.f.hit(reads); err != nil {
		return nil, err
	}
	return fb.b.PendingSources(ctx, limit)
}

func (fb faultyInbox) PendingOf(ctx context.Context, source string) (session.SourceState, error) {
	if err := fb.f.hit(reads); err != nil {
		return session.SourceState{}, err
	}
	return fb.b.PendingOf(ctx, source)
}

func (fb faultyInbox) Pending(ctx context.Context, source string, limit int) ([]session.InboxInput, error) {
	if err := fb.f.hit(reads); err != nil {
		return nil, err
	}
	return fb.b.Pending(ctx, source, limit)
}

func (fb faultyInbox) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	if err := fb.f.hit(reads); err != nil {
		return nil, err
	}
	return fb.b.Inputs(ctx, source, after, limit)
}

func (fb faultyInbox) Refuse(ctx context.Context, ids []string, reason string) error {
	if err := fb.f.hit(inboxWrites); err != nil {
		return err
	}
	return fb.b.Refuse(ctx, ids, reason)
}

// faultyOutbox is a store's outbox: claims and settlements fail as inbox
// writes, listings as reads.
type faultyOutbox struct {
	ob session.Outbox
	f  *Faults
}

func (fo faultyOutbox) ClaimOutbox(ctx context.Context, owner string, now, until time.Time, limit int) ([]session.OutboxItem, error) {
	if err := fo.f.hit(inboxWrites); err != nil {
		return nil, err
	}
	return fo.ob.ClaimOutbox(ctx, owner, now, until, limit)
}

func (fo faultyOutbox) SettleOutbox(ctx context.Context, id int64, owner string, st session.OutboxSettle) error {
	if err := fo.f.hit(inboxWrites); err != nil {
		return err
	}
	return fo.ob.SettleOutbox(ctx, id, owner, st)
}

func (fo faultyOutbox) OutboxOf(ctx context.Context, id string) ([]session.OutboxItem, error) {
	if err := fo.f.hit(reads); err != nil {
		return nil, err
	}
	return fo.ob.OutboxOf(ctx, id)
}

// faultyBlobs is a store's blobs: a put fails as an inbox write, a get
// as a read.
type faultyBlobs struct {
	bl session.Blobs
	f  *Faults
}

func (fb faultyBlobs) PutBlob(ctx context.Context, data []byte, typ string) (session.Blob, error) {
	if err := fb.f.hit(inboxWrites); err != nil {
		return session.Blob{}, err
	}
	return fb.bl.PutBlob(ctx, data, typ)
}

func (fb faultyBlobs) GetBlob(ctx context.Context, hash string) (session.Blob, []byte, error) {
	if err := fb.f.hit(reads); err != nil {
		return session.Blob{}, nil, err
	}
	return fb.bl.GetBlob(ctx, hash)
}

// faultyIndex is the two indexes of a store, whose queries are reads.
type faultyIndex struct {
	ri session.RequestIndex
	li session.LeaseIndex
	f  *Faults
}

func (fi faultyIndex) PendingRequests(ctx context.Context, opt session.RequestListOptions) ([]session.PendingRequest, error) {
	if err := fi.f.hit(reads); err != nil {
		return nil, err
	}
	return fi.ri.PendingRequests(ctx, opt)
}

func (fi faultyIndex) ExpiredRequests(ctx context.Context, now time.Time, after *session.PendingRequest, limit int) ([]session.PendingRequest, error) {
	if err := fi.f.hit(reads); err != nil {
		return nil, err
	}
	return fi.ri.ExpiredRequests(ctx, now, after, limit)
}

func (fi faultyIndex) CountRequests(ctx context.Context) (int64, error) {
	if err := fi.f.hit(reads); err != nil {
		return 0, err
	}
	return fi.ri.CountRequests(ctx)
}

func (fi faultyIndex) ExpiredLeases(ctx context.Context, after *session.Session, limit int) ([]*session.Session, error) {
	if err := fi.f.hit(reads); err != nil {
		return nil, err
	}
	return fi.li.ExpiredLeases(ctx, after, limit)
}

func (fi faultyIndex) LeaseOwners(ctx context.Context, ownerPrefix string) ([]string, error) {
	if err := fi.f.hit(reads); err != nil {
		return nil, err
	}
	return fi.li.LeaseOwners(ctx, ownerPrefix)
}

func (fi faultyIndex) LeasedTo(ctx context.Context, owner string, after *session.Session, limit int) ([]*session.Session, error) {
	if err := fi.f.hit(reads); err != nil {
		return nil, err
	}
	return fi.li.LeasedTo(ctx, owner, after, limit)
}
