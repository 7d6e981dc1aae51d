// Package session defines sessions, their event log, and the Store that
// keeps both durably.
//
// A session's log is append-only. Every commit appends the events of one
// runtime step, and optionally a snapshot of the runtime's state, in one
// transaction; the runtime yields events only after they are committed.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
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
	ID        string            `json:"id"`
	Agent     string            `json:"agent"`
	Status    Status            `json:"status"`
	Turn      int               `json:"turn"`
	Usage     model.Usage       `json:"usage"`
	LastSeq   int64             `json:"last_seq"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
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
}

// ListOptions pages through sessions, newest first.
type ListOptions struct {
	Limit int    // zero means 50
	After string // the last id of the previous page
}

// Store keeps sessions and their logs. All methods are safe for concurrent
// use. Implementations run the storetest suite.
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
