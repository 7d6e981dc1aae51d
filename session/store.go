// Package session defines sessions, their event log, and the Store that
// keeps both durably.
//
// A session's log is append-only. Every commit appends the events of one
// runtime step, and optionally a snapshot of the runtime's state, in one
// transaction; the runtime yields events only after they are committed.
package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/model"
)

// Sentinel errors every Store returns (wrapped) so callers can test with errors.Is.
var (
	// ErrNotFound: no session with that id.
	ErrNotFound = errors.New("session not found")
	// ErrExists: CreateSession with an id already taken.
	ErrExists = errors.New("session already exists")
	// ErrConflict: a commit whose ExpectSeq is not the session's last seq;
	// another writer advanced the session first.
	ErrConflict = errors.New("session was changed concurrently")
	// ErrLeaseHeld: Acquire of a session whose lease another owner holds
	// and has not let expire. The error is a *LeaseHeldError.
	ErrLeaseHeld = errors.New("session is leased by another owner")
	// ErrFenced: a Commit, Renew or Release with a fencing token that is no
	// longer the session's: a newer owner took the session over (or, for a
	// commit without a token, someone holds a live lease). Nothing was
	// written.
	ErrFenced = errors.New("session lease lost to a newer owner")
	// ErrFull: a bounded submit (BoundedInbox) of an input its source has
	// no room for; nothing was stored. The error is a *FullError.
	ErrFull = errors.New("the source has as many inputs pending as its bounds allow")
)

// Status of a session (the status of its latest run).
type Status string

// Session statuses.
const (
	StatusIdle        Status = "idle"
	StatusRunning     Status = "running"
	StatusWaiting     Status = "waiting"
	StatusPaused      Status = "paused"
	StatusDone        Status = "done"
	StatusFailed      Status = "failed"
	StatusCanceled    Status = "canceled"
	StatusInterrupted Status = "interrupted"
)

// Session is the summary row of a session. Status, Turn, Usage and LastSeq
// are updated by every Commit.
type Session struct {
	// Tenant owns the session; stores set it from the context of
	// CreateSession (see WithTenant).
	Tenant    string            `json:"tenant"`
	ID        string            `json:"id"`
	Agent     string            `json:"agent"`
	Status    Status            `json:"status"`
	Turn      int               `json:"turn"`
	Usage     model.Usage       `json:"usage"`
	LastSeq   int64             `json:"last_seq"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	// Lease is the session's lease as the store last saw it, expired or
	// not; nil when no owner holds it (or the store has no leases).
	Lease *Lease `json:"lease,omitempty"`
	// Control is the control request waiting for the owner of the lease
	// (see Controller); nil when there is none or the store has no
	// controls.
	Control *Control `json:"control,omitempty"`
}

// Snapshot is the runtime's serialised state as of event Seq. Loading a
// session is: the newest snapshot, then the events after it.
type Snapshot struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// Commit is one atomic write: events appended after ExpectSeq, the
// session row's new summary, and optionally a snapshot.
type Commit struct {
	SessionID string
	// ExpectSeq must equal the session's LastSeq; Events are numbered
	// ExpectSeq+1, ExpectSeq+2, ... (their Seq fields must already say so).
	ExpectSeq int64
	Events    []*Event
	Status    Status
	Turn      int
	Usage     model.Usage
	Time      time.Time
	// Snapshot, when not nil, replaces the session's snapshot. Its Seq is
	// at most the last event's seq.
	Snapshot *Snapshot
	// Fence is the token of the writer's lease (see Leaser); zero when the
	// writer holds none. A store that implements Leaser refuses, with
	// ErrFenced and writing nothing, a commit whose Fence is not the
	// session's current token, and a commit without one while another
	// owner holds a live lease. Stores without leases ignore it.
	Fence int64
	// Release, with a Fence, releases the writer's lease in the commit's
	// transaction, as Leaser.Release would after it: the last commit of a
	// run frees its session without a write of its own. A refused commit
	// releases nothing. A store that implements Leaser must honour it;
	// stores without leases ignore it.
	Release bool
	// Answers are the ids of inbox inputs (see Inbox) this commit's run
	// answers: in the commit's transaction each is marked answered by
	// RunID, and a commit naming an input that is not pending (another
	// turn answered it, or it was refused) is refused with ErrConflict,
	// writing nothing — so that across processes an input is answered
	// exactly once. A store that implements Inbox must honour it; others
	// refuse a commit with Answers.
	Answers []string
	// RunID is the run the Answers are recorded for.
	RunID string
	// Outbox are messages the commit's events owe the outside world (see
	// OutboxItem; only SessionID, Seq, Kind and Source are read): stored
	// pending and due at the commit's time, in its transaction. A store
	// that implements Outbox must honour it; others refuse a commit with
	// Outbox.
	Outbox []OutboxItem
}

// Check reports what makes c unfit to store, whatever the store: a nil
// event, events not numbered ExpectSeq+1, ExpectSeq+2, ... (ErrConflict),
// a snapshot past the commit's last seq. Stores call it first.
func (c *Commit) Check() error {
	for i, ev := range c.Events {
		if ev == nil {
			return fmt.Errorf("event at index %d is nil", i)
		}
		if want := c.ExpectSeq + int64(i) + 1; ev.Seq != want {
			return fmt.Errorf("event at index %d has seq %d, want %d: %w", i, ev.Seq, want, ErrConflict)
		}
	}
	if last := c.ExpectSeq + int64(len(c.Events)); c.Snapshot != nil && (c.Snapshot.Seq < 0 || c.Snapshot.Seq > last) {
		return fmt.Errorf("snapshot seq %d is outside 0..%d, the commit's last seq", c.Snapshot.Seq, last)
	}
	if err := c.CheckOutbox(); err != nil {
		return err
	}
	// A turn answers a few inputs: a quadratic look is cheaper than a map.
	for i, id := range c.Answers {
		if slices.Contains(c.Answers[:i], id) {
			return fmt.Errorf("answers name input %q twice", id)
		}
	}
	return nil
}

// ListOptions pages through sessions, newest first.
type ListOptions struct {
	Limit int    // zero means 50
	After string // the last id of the previous page
	// AfterCreated is the CreatedAt of the session After, when the caller
	// has it (the last session of the page before): the store then places
	// the page by it and After without looking After up, so that a session
	// deleted since its page was listed still marks where the next begins.
	// Zero: the store looks After up (ErrNotFound when it is gone).
	AfterCreated time.Time
	// Status, when set, keeps only the sessions with that status.
	Status Status
	// Agent, when set, keeps only the sessions of that agent.
	Agent string
	// AllTenants lists the sessions of every tenant rather than of the
	// context's, for operators and recovery; each Session says its tenant.
	// Sessions are then ordered by CreatedAt, tenant and ID, descending,
	// and the page after the session After of AfterTenant follows.
	AllTenants  bool
	AfterTenant string
	// SkipHidden leaves out the runtime's hidden sessions (Hidden): a
	// page then holds Limit other sessions as long as there are, and its
	// last is never a hidden one.
	SkipHidden bool
}

// Store keeps sessions and their logs. All methods are safe for concurrent
// use. Implementations run the storetest suite.
//
// Every method, and every optional capability, is scoped by the tenant of
// its context (TenantOf): a session of another tenant is ErrNotFound, and
// two tenants may have sessions with the same id.
type Store interface {
	CreateSession(ctx context.Context, s *Session) error
	GetSession(ctx context.Context, id string) (*Session, error)
	ListSessions(ctx context.Context, opt ListOptions) ([]*Session, error)
	// DeleteSession removes a session, its events and its snapshot.
	DeleteSession(ctx context.Context, id string) error
	// Commit appends events and updates the session in one transaction.
	// A store may keep the *Event pointers of c.Events (callers must not
	// change a committed event) but must not keep the slice c.Events itself,
	// nor c, nor c.Snapshot.Data once Commit returns: callers reuse them
	// (the runtime reuses one buffer for all its snapshots).
	// It returns ErrConflict, and writes nothing, when c.ExpectSeq is stale
	// or the events are not numbered consecutively from it.
	Commit(ctx context.Context, c *Commit) error
	// LoadSnapshot returns the newest snapshot, or nil if there is none.
	LoadSnapshot(ctx context.Context, id string) (*Snapshot, error)
	// Events yields the events with seq > after, in order. An error ends
	// the sequence. ErrNotFound is yielded for an unknown session.
	Events(ctx context.Context, id string, after int64) iter.Seq2[*Event, error]
	Close() error
}

// Lease is one owner's claim on a session: while it is live (until
// Expires) no other owner can acquire the session, and every commit the
// owner makes carries Token, which grows with every new owner, so that a
// writer whose lease was taken over cannot write (fencing).
type Lease struct {
	SessionID string    `json:"session_id"`
	Owner     string    `json:"owner"`
	Token     int64     `json:"token"`
	Expires   time.Time `json:"expires"`
}

// Take is the rule every store's Acquire applies to a session's current
// lease l (Owner empty when none was ever held): the live owner acquiring
// again keeps its token; another owner of a live lease gets a
// *LeaseHeldError; otherwise the token grows by one and owner takes it.
// The lease then lasts ttl from now (to the microsecond, as stores keep
// it).
func (l Lease) Take(owner string, now time.Time, ttl time.Duration) (Lease, error) {
	live := l.Owner != "" && now.Before(l.Expires)
	switch {
	case live && l.Owner == owner:
	case live:
		return Lease{}, &LeaseHeldError{Lease: l}
	default:
		l.Token++
		l.Owner = owner
	}
	l.Expires = now.Add(ttl).Truncate(time.Microsecond)
	return l, nil
}

// LeaseHeldError is Acquire's error when another owner holds a live
// lease: who, and until when. It wraps ErrLeaseHeld.
type LeaseHeldError struct {
	Lease Lease
}

func (e *LeaseHeldError) Error() string {
	return "session " + e.Lease.SessionID + " is leased by " + e.Lease.Owner + " until " + e.Lease.Expires.UTC().Format(time.RFC3339)
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Leaser is the optional store capability of leases with fencing: a
// session is owned by one runner at a time across processes. Every store
// of this module implements it; the runtime checks for it at run time.
//
// A lease is live until its expiry, by the store's clock. The token
// increases every time the session passes to a new owner (after a
// release, an expiry, or for the first owner), never when the live owner
// acquires again or renews.
type Leaser interface {
	// Acquire gives owner the session's lease for ttl: a new lease if
	// none is live, the same one extended if owner holds it. It fails
	// with a *LeaseHeldError while another owner's lease is live, and
	// with ErrNotFound for an unknown session.
	Acquire(ctx context.Context, id, owner string, ttl time.Duration) (Lease, error)
	// Renew extends l by ttl from now. It fails with ErrFenced if l's
	// token and owner are no longer the session's (another owner took it
	// over, or the session was dropped and made anew: see Dropper), even
	// if it had expired meanwhile; an expired lease nobody took over is
	// renewed.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release ends l, so that the session may be acquired at once. It
	// fails with ErrFenced when l's token and owner are no longer the
	// session's. A caller that knows the owner of a live lease is gone
	// (its process died) may release that owner's lease with the Lease a
	// LeaseHeldError reported.
	Release(ctx context.Context, l Lease) error
}

// Dropper is the optional capability of a Leaser to end a lease by
// deleting its session, in one write: how a claim (Runner.Claim), a
// hidden session that holds no events, goes when it is released, so that
// the claims of sources nobody serves any more do not pile up. A session
// made anew after a drop starts again at token 1: Renew and Release, which
// check the owner beside the token, fence off a holder of the dropped one.
type Dropper interface {
	// Drop deletes session l.SessionID if l is its lease (its token and
	// owner, live or expired) and it holds no events. It changes nothing
	// and fails with ErrFenced when l is not the session's lease, with
	// ErrConflict when the session holds events, with ErrNotFound when
	// there is no such session.
	Drop(ctx context.Context, l Lease) error
}

// LeasedCreator is the optional capability of a Leaser to take a
// session's lease and create the session if it does not exist, in one
// write: what the runtime does as a run begins on a session it may never
// have seen, without a read to find out first.
type LeasedCreator interface {
	// CreateOrAcquire gives owner the lease of session s.ID for ttl, and
	// returns the session as GetSession would after it. If the session
	// does not exist it is created from s, as CreateSession does, with
	// its first lease (token 1), and created is true; otherwise the
	// lease is taken as Acquire takes it (a *LeaseHeldError while another
	// owner's lease is live) and s is not used beyond its ID.
	CreateOrAcquire(ctx context.Context, s *Session, owner string, ttl time.Duration) (got *Session, l Lease, created bool, err error)
}

// CreateThenAcquire is LeasedCreator.CreateOrAcquire for a store whose
// steps are separate: create stores s with its first lease (ErrExists if
// the session exists), then, for a session that exists, st's Acquire; the
// session is read back with st's GetSession. now is the clock of st's
// leases. name prefixes its errors of bad arguments.
func CreateThenAcquire(ctx context.Context, st interface {
	Store
	Leaser
}, name string, create func(context.Context, *Session, Lease) error, now time.Time,
	s *Session, owner string, ttl time.Duration) (*Session, Lease, bool, error) {
	if owner == "" || ttl <= 0 {
		return nil, Lease{}, false, fmt.Errorf("%s: create or acquire %q: need an owner and a positive ttl", name, s.ID)
	}
	l, err := (Lease{SessionID: s.ID}).Take(owner, now, ttl)
	if err != nil {
		return nil, Lease{}, false, err
	}
	created := true
	switch err := create(ctx, s, l); {
	case errors.Is(err, ErrExists):
		if l, err = st.Acquire(ctx, s.ID, owner, ttl); err != nil {
			return nil, Lease{}, false, err
		}
		created = false
	case err != nil:
		return nil, Lease{}, false, err
	}
	got, err := st.GetSession(ctx, s.ID)
	if err != nil {
		return nil, Lease{}, false, err
	}
	return got, l, created, nil
}

// Controller is the optional store capability of carrying control
// requests — cancel, interrupt — from any process to the process that
// runs the session: the request is kept with the session for the owner of
// its lease, which looks for the requests made to it (Controls) while it
// runs sessions, and acts on them. A Leaser implements it.
type Controller interface {
	// RequestControl records c for the owner of session id's lease l (as
	// the caller saw it held, live, by another owner). It fails with
	// ErrFenced, recording nothing, when l is no longer the session's
	// lease (its owner released it, or another took it over), and with
	// ErrNotFound for an unknown session. A request replaces an earlier
	// one, except that a steering (ControlSteer) replaces only a
	// steering: made while a cancellation or an interruption is kept, it
	// records nothing (and is no error: the run stops). The store
	// forgets it when the lease is released (by Release, or by a Commit
	// that releases); a takeover keeps it, for the new owner.
	RequestControl(ctx context.Context, id string, l Lease, c Control) error
	// Controls returns the control requests kept for sessions whose lease
	// owner holds, of every tenant.
	Controls(ctx context.Context, owner string) ([]SessionControl, error)
}

// SessionControl is a control request and the session it is for.
type SessionControl struct {
	Tenant    string
	SessionID string
	Control   Control
}

// InputState is where an inbox input stands.
type InputState string

// Input states.
const (
	InputPending  InputState = "pending"  // waiting for a turn to answer it
	InputAnswered InputState = "answered" // a turn's run_started answered it (Commit.Answers)
	InputRefused  InputState = "refused"  // refused (Inbox.Refuse): the reason says why
)

// InputPart is a piece of an input's content: text, or JSON data. Stores
// keep Data compact (json.Compact: the whitespace between tokens goes,
// the rest is kept byte for byte), so that every store gives back the
// same bytes.
type InputPart struct {
	Type string          `json:"type"` // "text", "data" or "media" (Data names a blob: {hash, type, name, size})
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// InboxInput is an input from the outside world waiting in its source's
// inbox for the turn that answers it (see Inbox).
type InboxInput struct {
	// ID names the input; the caller sets it (unique in the store).
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	// Source is where the input came from (a channel, a user); a source's
	// inputs are answered in order, by turns of SessionID.
	Source    string            `json:"source"`
	SessionID string            `json:"session_id"`
	Parts     []InputPart       `json:"parts"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	// Key, when set, makes Submit idempotent per tenant and source; Digest
	// is the content's hash, which tells a repeat from a conflict.
	Key    string `json:"key,omitempty"`
	Digest string `json:"digest,omitempty"`
	// At is when the store took it (its clock); Seq its order among all
	// the store's inputs, which Submit sets: a source's inputs in Seq
	// order are its inputs in the order they came.
	At    time.Time  `json:"at"`
	Seq   int64      `json:"seq"`
	State InputState `json:"state"`
	// RunID is the run that answered it; Reason why it was refused.
	RunID  string `json:"run_id,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Corrupt, set by a store reading it back, says why the input's stored
	// content could not be decoded (a damaged row): its Parts and Metadata
	// are then empty. The gateway sets such an input aside, refused, and
	// goes on with the rest of the inbox.
	Corrupt string `json:"corrupt,omitempty"`
}

// Check reports what makes in unfit to submit, whatever the store: no
// id, source or session; a Tenant other than tenant (the context's); a
// part that is neither text nor data, a data part whose Data is not
// JSON, a text part with Data. Stores call it first.
func (in *InboxInput) Check(tenant string) error {
	switch {
	case in.ID == "" || in.Source == "" || in.SessionID == "":
		return fmt.Errorf("input %q: an input needs an id, a source and a session", in.ID)
	case in.Tenant != "" && in.Tenant != tenant:
		return fmt.Errorf("input %q: its tenant %q is not the context's %q", in.ID, in.Tenant, tenant)
	}
	for i, p := range in.Parts {
		switch {
		case p.Type != "text" && p.Type != "data" && p.Type != "media":
			return fmt.Errorf("input %q: part %d has type %q, want text, data or media", in.ID, i, p.Type)
		case p.Type != "text" && !json.Valid(p.Data):
			return fmt.Errorf("input %q: part %d: its data is not JSON", in.ID, i)
		case p.Type == "text" && p.Data != nil:
			return fmt.Errorf("input %q: part %d: a text part has data", in.ID, i)
		}
	}
	return nil
}

// Size is the bytes of in's content: its text parts' text and its data
// parts' JSON (compact, once stored). It is what the gateway's bounds on
// one input (max_input_bytes) and on what a source piles up count, and
// what a store adds up for SourceState.Bytes.
func (in *InboxInput) Size() int {
	n := 0
	for _, p := range in.Parts {
		n += len(p.Text) + len(p.Data)
	}
	return n
}

// SourceState summarises a source's pending inputs.
type SourceState struct {
	Tenant    string `json:"tenant"`
	Source    string `json:"source"`
	SessionID string `json:"session_id"` // of its newest pending input
	Pending   int    `json:"pending"`
	// Bytes is the size of its pending inputs (InboxInput.Size, added
	// up): what its next turn would merge.
	Bytes int64     `json:"bytes"`
	First time.Time `json:"first"` // when its oldest pending input came
	Last  time.Time `json:"last"`  // when its newest pending input came
	// Version is the Seq of its newest pending input: it changes with
	// every input, so a source whose version did not change for a while
	// has settled (debounce).
	Version int64 `json:"version"`
}

// Inbox is the optional store capability of a durable inbox of inputs,
// per source, for the gateway: an input is stored before Submit returns,
// survives any process, and is answered exactly once (Commit.Answers).
// Every method is scoped by ctx's tenant but PendingSources, which lists
// every tenant's.
type Inbox interface {
	// Submit stores in, pending; the store sets At, Seq and State (and
	// Tenant from ctx), and ignores in's RunID and Reason. When the
	// source already has an input with in's non-empty Key, nothing is
	// stored: that input is returned, as it is now, with dup true, or, if
	// its Digest differs, an error wrapping ErrConflict. Otherwise an ID
	// the tenant's inbox already holds is an error wrapping ErrExists.
	// Submits of one key from many processes at once store one input.
	// An input that fails InboxInput.Check is an error.
	Submit(ctx context.Context, in *InboxInput) (stored InboxInput, dup bool, err error)
	// PendingSources lists the sources with pending inputs, of every
	// tenant, in the order of their oldest pending inputs (by Seq), at
	// most limit (zero or less: all).
	PendingSources(ctx context.Context, limit int) ([]SourceState, error)
	// PendingOf summarises source's pending inputs as PendingSources
	// does (Pending zero, and only Tenant and Source set, when it has
	// none): what the gateway's caps on a source read as each input
	// comes, without reading the inputs.
	PendingOf(ctx context.Context, source string) (SourceState, error)
	// Pending returns source's pending inputs in order (by Seq), the
	// oldest limit of them (zero or less: all).
	Pending(ctx context.Context, source string, limit int) ([]InboxInput, error)
	// Inputs returns the inputs of source with Seq > after, in any state,
	// in order, at most limit (zero or less: all): what `agentrt inbox`
	// shows.
	Inputs(ctx context.Context, source string, after int64, limit int) ([]InboxInput, error)
	// Refuse marks pending inputs refused with reason; one that is not
	// pending, or not in the context's tenant's inbox, is left as it is.
	Refuse(ctx context.Context, ids []string, reason string) error
}

// Foreign is the optional capability of a store that can tell when
// another process wrote to it: Foreign returns a count that changes
// (within the store's poll interval) after another process committed
// anything, and stays the same while only this process writes. A reader
// that polls the store for what other processes did skips the read when
// the count has not changed since its last. A store that cannot tell
// does not implement it.
type Foreign interface {
	Foreign() int64
}

// Bounds bound what one source of an inbox may have pending: its inputs,
// and their size (InboxInput.Size). A zero field bounds nothing.
type Bounds struct {
	Pending int
	Bytes   int64
}

// FullError is a bounded submit's error when the source has no room: what
// it has pending, beside the bounds. It wraps ErrFull.
type FullError struct {
	Bounds  Bounds
	Pending int   // the source's pending inputs
	Bytes   int64 // their size
}

func (e *FullError) Error() string {
	return fmt.Sprintf("the source has %d inputs (%d bytes) pending; bounds %d inputs, %d bytes", e.Pending, e.Bytes, e.Bounds.Pending, e.Bounds.Bytes)
}

func (e *FullError) Unwrap() error { return ErrFull }

// BoundedInbox is the optional capability of an Inbox to bound what one
// source piles up in Submit's own write, so that a bound costs no read of
// its own and holds however many submit at once (as far as the store
// orders submits: a store that stores a batch of submits in one statement
// may let the batch's inputs of one source go past it together). The
// gateway submits through it when the store has it: a wrapper of a store
// that changes Submit changes SubmitWithin too.
type BoundedInbox interface {
	// SubmitWithin is Submit, unless in's source has as many inputs
	// pending as b allows, or in's size would take their size past b:
	// then nothing is stored, and the error is a *FullError. An input in
	// repeats with its key is that input, as for Submit, however full its
	// source.
	SubmitWithin(ctx context.Context, in *InboxInput, b Bounds) (stored InboxInput, dup bool, err error)
}

// Fits reports whether an input of size bytes fits beside pending inputs
// of the given size, within b: what every BoundedInbox decides.
func (b Bounds) Fits(pending int, bytes, size int64) bool {
	return (b.Pending <= 0 || pending < b.Pending) && (b.Bytes <= 0 || bytes+size <= b.Bytes)
}

// PendingRequest is a request for a person — an input_required event —
// that no input_resolved has answered yet, as a RequestIndex keeps it.
type PendingRequest struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	// Agent is the agent that asked: the event's, or the session's when
	// the event names none.
	Agent string `json:"agent"`
	// Seq is the seq of the input_required event, Asked its time (to the
	// microsecond).
	Seq   int64     `json:"seq"`
	Asked time.Time `json:"asked"`
	// Request is the event's payload: the request's id, kind, question,
	// options, the calls it is about, when it expires.
	Request InputRequired `json:"request"`
}

// Cursor returns where a page of PendingRequests that ends with p ends:
// the After of the next page.
func (p *PendingRequest) Cursor() RequestCursor {
	return RequestCursor{Asked: p.Asked, SessionID: p.SessionID, Seq: p.Seq}
}

// RequestCursor is a place in a tenant's pending requests, in their
// order (Asked, then SessionID, then Seq): the last request of a page.
// The zero cursor is before the first.
type RequestCursor struct {
	Asked     time.Time
	SessionID string
	Seq       int64
}

// IsZero reports whether c is the zero cursor, before the first request.
func (c RequestCursor) IsZero() bool { return c.Asked.IsZero() && c.SessionID == "" && c.Seq == 0 }

// String encodes c as a page token that ParseRequestCursor reads back:
// URL-safe, and opaque to whoever holds it. The zero cursor is "".
func (c RequestCursor) String() string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d.%d.%s", c.Asked.UnixMicro(), c.Seq, c.SessionID))
}

// ParseRequestCursor reads a token that RequestCursor.String wrote; ""
// is the zero cursor.
func ParseRequestCursor(s string) (RequestCursor, error) {
	if s == "" {
		return RequestCursor{}, nil
	}
	bad := func(why string) (RequestCursor, error) {
		return RequestCursor{}, fmt.Errorf("request cursor %q: %s (want a token a listing of pending requests gave)", s, why)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	parts := strings.SplitN(string(b), ".", 3)
	if len(parts) != 3 || parts[2] == "" {
		return bad("not a cursor")
	}
	asked, err1 := strconv.ParseInt(parts[0], 10, 64)
	seq, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || seq <= 0 {
		return bad("not a cursor")
	}
	return RequestCursor{Asked: time.UnixMicro(asked).UTC(), SessionID: parts[2], Seq: seq}, nil
}

// RequestListOptions pages through a tenant's pending requests, oldest
// first.
type RequestListOptions struct {
	Limit int           // zero or less means 50
	After RequestCursor // the Cursor of the previous page's last request
	// SessionID, Agent and Kind, when set, keep only the requests of that
	// session, asked by that agent, of that kind.
	SessionID string
	Agent     string
	Kind      RequestKind
}

// RequestIndex is the optional store capability of an index of the
// pending requests for people, kept by Commit in its transaction from
// the events it commits: an input_required event adds its request, an
// input_resolved removes it (a request asked and answered in one commit
// is never listed); DeleteSession removes the session's. A session whose
// log is written anew (a fork, an import) has the requests of the events
// it commits. It is what a person's inbox lists — across the tenant's
// sessions, without reading any log — and how recovery finds the
// requests whose deadline passed.
type RequestIndex interface {
	// PendingRequests returns the context tenant's pending requests in
	// the order of RequestCursor — oldest first — after opt.After, at
	// most opt.Limit, those opt's filters keep.
	PendingRequests(ctx context.Context, opt RequestListOptions) ([]PendingRequest, error)
	// ExpiredRequests returns the pending requests of every tenant whose
	// Expires is at or before now (the runtime gives them their default
	// decision then), ordered by Expires, then tenant, session and Seq:
	// those after the request after (nil: from the first), at most limit
	// (zero or less: 50).
	ExpiredRequests(ctx context.Context, now time.Time, after *PendingRequest, limit int) ([]PendingRequest, error)
	// CountRequests returns how many requests of every tenant are
	// pending: what a server's metrics report.
	CountRequests(ctx context.Context) (int64, error)
}

// LeaseIndex is the optional capability of a Leaser to find, across
// tenants and without looking at every session, the running sessions
// whose run may have stopped with its process: what recovery looks for.
type LeaseIndex interface {
	// ExpiredLeases returns the sessions of every tenant whose status is
	// running and whose lease expired, by the store's clock (the one its
	// leases expire by), or that have none: ordered by lease expiry (none
	// first), then tenant and id, those after the session after (nil:
	// from the first; its Lease, Tenant and ID place it), at most limit
	// (zero or less: 50).
	ExpiredLeases(ctx context.Context, after *Session, limit int) ([]*Session, error)
	// LeaseOwners returns the owners of the leases, live or expired, of
	// the sessions of every tenant whose status is running, whose names
	// begin with ownerPrefix (not empty): each once, in the order of
	// their bytes. A runner finds there the processes of its own host,
	// which it can tell are gone before their leases expire; their
	// number, not the sessions', bounds the work.
	LeaseOwners(ctx context.Context, ownerPrefix string) ([]string, error)
	// LeasedTo returns the sessions of every tenant whose status is
	// running and whose lease, live or expired, owner holds: ordered by
	// tenant and id, after the session after (nil: from the first), at
	// most limit (zero or less: 50).
	LeasedTo(ctx context.Context, owner string, after *Session, limit int) ([]*Session, error)
}

// Follower is the optional store capability of following a session's log
// as it grows, from this process or any other.
type Follower interface {
	// Follow yields the events with seq > after, then each new event as it
	// is committed, in order, with no gap, until ctx ends (then it ends
	// without an error) or the consumer stops. It yields ErrNotFound, and
	// ends, when the session does not exist or is deleted; any other
	// error ends it too.
	Follow(ctx context.Context, id string, after int64) iter.Seq2[*Event, error]
}

// Relay is the optional store capability of passing live messages — the
// tokens of runs, which are never stored — between the processes that
// share the store, so that a watcher in one process sees the tokens of a
// run in another. A "process" here is one Store value: a store never
// delivers its own messages to its own subscribers.
//
// Delivery is best effort, like the live events themselves: a message
// may be lost (a connection that broke, a subscriber too slow) but is
// never made up, and a session's live events come in the order they
// were published (the messages of different sessions may not). All
// methods may be called concurrently.
type Relay interface {
	// Publish sends msgs to the subscribers of every other process
	// sharing the store, in as few round trips as the transport allows
	// (one for the Postgres store). It does not keep msgs. A message the
	// transport cannot carry (too large, and not a token whose text can
	// be cut) is left out, and the error says so after the rest are
	// sent; any other error means none may have been sent.
	Publish(ctx context.Context, msgs []Relayed) error
	// Subscribe has deliver called with the messages other processes
	// publish, until stop is called or the store is closed. It returns
	// once the subscription is in place (or could not be, for now: the
	// store keeps trying, see RelayListening), or with ctx's error if
	// ctx ends first. Calls of deliver come one at a time, from the
	// store's own goroutine; deliver must return quickly, must not keep
	// the slice and must not call stop. Once stop returns, deliver is not
	// called any more.
	Subscribe(ctx context.Context, deliver func(msgs []Relayed)) (stop func(), err error)
	// Sync returns once this process's subscribers have been handed
	// every message published, by any process, before Sync was called —
	// at once if the store is not listening. A watcher that has read a
	// commit from the log calls it to be sure the live events published
	// before that commit have reached it: the log can be read sooner
	// than they are delivered. It returns ctx's error if ctx ends first.
	Sync(ctx context.Context) error
}

// RelayKind says what a Relayed message is.
type RelayKind uint8

// Kinds of relayed messages.
const (
	// RelayLive carries a live event of a run of the session.
	RelayLive RelayKind = iota
	// RelayWatching says that the publisher has watchers of the session:
	// it wants the session's live events. It holds for a while only (the
	// subscriber decides how long), so a watching process says it again
	// every so often.
	RelayWatching
	// RelayHello asks the other processes to say at once which sessions
	// they watch (RelayWatching): the publisher has just started
	// listening and knows nothing yet.
	RelayHello
	// RelayListening is delivered, never published: from now on the
	// subscriber receives what others publish. It comes when Subscribe
	// finds the store listening, and again each time the store listens
	// anew after losing its connection — messages published in between
	// were lost.
	RelayListening
)

// Relayed is one message carried by a Relay.
type Relayed struct {
	Kind RelayKind
	// Tenant and SessionID name the session (none in RelayHello and
	// RelayListening).
	Tenant    string
	SessionID string
	// Event is the live event (Seq 0: a token, a tool-call delta) of a
	// RelayLive message; nil otherwise. Its SessionID is SessionID.
	Event *Event
	// After is, in a RelayLive message, the seq of the last event the
	// session had committed when Event was made: a watcher shows Event
	// right after that event.
	After int64
}

// CheckID reports whether id is usable as the id of a session that
// takes input: 1 to 128 letters, digits, '_', '.', '-', ':' or '@', and
// not a hidden session's — ids starting with "_rules." (an agent's rule
// log) or "_claim." (a claim) are the runtime's own.
func CheckID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("session id %q: want 1 to 128 characters", id)
	}
	for i := 0; i < len(id); i++ {
		switch ch := id[i]; {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9',
			ch == '_', ch == '.', ch == '-', ch == ':', ch == '@':
		default:
			return fmt.Errorf("session id %q: want only letters, digits, '_', '.', '-', ':' and '@'", id)
		}
	}
	if Hidden(id) {
		return fmt.Errorf("session id %q: ids starting with _rules. or _claim. are the runtime's hidden sessions", id)
	}
	return nil
}

// Hidden reports whether id is one of the runtime's hidden sessions: an
// agent's rule log (its id starts with "_rules.") or a claim ("_claim.").
// No turn runs in one, and listings for people leave them out
// (ListOptions.SkipHidden).
func Hidden(id string) bool {
	return strings.HasPrefix(id, "_rules.") || strings.HasPrefix(id, "_claim.")
}
