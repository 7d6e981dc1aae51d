package session

import (
	"context"
	"fmt"
	"time"
)

// OutboxItem is a message owed to the world outside: an event of a
// session — a turn's answer, a question for a person, a failure — to
// deliver to the source its turn came from (a chat on a platform). It is
// written in the commit that records the event (Commit.Outbox), so that a
// message is owed exactly when its event is stored, and delivered by
// whichever process claims it (Outbox), at least once.
type OutboxItem struct {
	// ID is the store's: from 1, growing with each item of the store.
	ID        int64  `json:"id"`
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	// Seq is the event to deliver, Kind its type (final,
	// input_required, error, ...).
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	// Source is where it goes: the gateway source of the turn (a
	// channel's conversation).
	Source string `json:"source"`
	// State is OutboxPending, OutboxSent or OutboxFailed.
	State string `json:"state"`
	// Attempts counts the claims of the item: one more than the attempts
	// that failed, once it is claimed — an item claimed again after its
	// claim lapsed may have been sent by the process that let it lapse.
	Attempts int `json:"attempts"`
	// Due is when the next attempt may be made.
	Due time.Time `json:"due"`
	// Ref is the platform's id of the message delivered (OutboxSent).
	Ref string `json:"ref,omitempty"`
	// Error is the last failed attempt's.
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
}

// Outbox item states.
const (
	OutboxPending = "pending" // owed: due, or claimed and being sent
	OutboxSent    = "sent"    // delivered
	OutboxFailed  = "failed"  // given up on
)

// OutboxSettle is how an attempt at an item ended: Sent (with the
// platform's Ref), or failed with Error — to be tried again at Due, or
// given up (GiveUp).
type OutboxSettle struct {
	Sent   bool
	Ref    string
	Error  string
	Due    time.Time
	GiveUp bool
}

// Outbox is the optional capability of a store that keeps messages owed
// to the outside world: written by Commit.Outbox in a commit's
// transaction, claimed by a deliverer, settled once sent or given up.
// Items are kept with their session, and deleted with it.
type Outbox interface {
	// ClaimOutbox claims for owner, until until, at most limit items of
	// every tenant, each its session's oldest pending item (a
	// conversation's messages go out in order, one at a time), when it is
	// due at now and its claim (if any) has lapsed by now; oldest (by ID)
	// first. It counts an attempt of each.
	ClaimOutbox(ctx context.Context, owner string, now, until time.Time, limit int) ([]OutboxItem, error)
	// SettleOutbox records how owner's attempt at item id ended. An item
	// that is not pending, or that owner no longer holds a claim on
	// (another claimed it after owner's claim lapsed), is refused with an
	// error wrapping ErrConflict, changing nothing.
	SettleOutbox(ctx context.Context, id int64, owner string, s OutboxSettle) error
	// OutboxOf lists the items of session id (ctx's tenant), oldest
	// first.
	OutboxOf(ctx context.Context, id string) ([]OutboxItem, error)
}

// CheckOutbox reports what makes a commit's outbox items unfit to store:
// an item of another session, one whose Seq is not one of the commit's
// events, one without a source or kind.
func (c *Commit) CheckOutbox() error {
	for i, it := range c.Outbox {
		switch {
		case it.Source == "" || it.Kind == "":
			return fmt.Errorf("outbox item %d: wants a source and a kind", i+1)
		case it.Seq <= c.ExpectSeq || it.Seq > c.ExpectSeq+int64(len(c.Events)):
			return fmt.Errorf("outbox item %d: event %d is not one of the commit's (%d to %d)", i+1, it.Seq, c.ExpectSeq+1, c.ExpectSeq+int64(len(c.Events)))
		}
	}
	return nil
}
