package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/session"
)

// claimPrefix starts the id of the hidden session whose lease is a claim
// (see Runner.Claim).
const claimPrefix = "_claim."

// Claim takes this runner's claim on name, of ctx's tenant: one runner at
// a time holds it, across every process on the store. It is a lease, as a
// session's run holds one: renewed while held, taken over at once from a
// dead process of this host, after the lease TTL from a process of
// another host. A claim a live owner holds is an error of code
// lease_held saying who holds it.
//
// The context returned is ctx's, canceled (with an error of code
// lease_lost) if the claim is taken over; release ends the claim and
// that context. A store without leases (session.Leaser) grants every
// claim: it serves one process.
//
// The gateway claims a source before serving it, so that its turns —
// modules included — run in one process at a time. The claim lives on a
// hidden session (its id starts with "_claim.", ListSessions leaves it
// out) that holds no events.
func (r *Runner) Claim(ctx context.Context, name string) (claimed context.Context, release func(), err error) {
	if name == "" {
		return nil, nil, errors.New("agentrt: a claim needs a name")
	}
	cctx, cancel := context.WithCancelCause(ctx)
	if r.leaser == nil {
		return cctx, func() { cancel(context.Canceled) }, nil
	}
	sum := sha256.Sum256([]byte(name))
	id := claimPrefix + hex.EncodeToString(sum[:16])
	k, err := r.acquireLease(ctx, id, false, nil)
	if ae := AsError(err); ae != nil && ae.Code == CodeNotFound {
		now := r.now()
		err = r.store.CreateSession(ctx, &session.Session{ID: id, Status: session.StatusIdle,
			Metadata: map[string]string{"kind": "claim", "name": name}, CreatedAt: now, UpdatedAt: now})
		if err != nil && !errors.Is(err, session.ErrExists) {
			cancel(err)
			return nil, nil, &Error{Kind: FailStore, Msg: "create the claim " + name, Err: err}
		}
		k, err = r.acquireLease(ctx, id, false, nil)
	}
	if err != nil {
		cancel(err)
		if ae := AsError(err); ae != nil && ae.Code == CodeLeaseHeld {
			return nil, nil, &Error{Kind: FailState, Code: CodeLeaseHeld,
				Msg: fmt.Sprintf("%s is claimed by another runner: %s", name, ae.Msg), Err: err}
		}
		return nil, nil, err
	}
	k.watch(cancel)
	return cctx, func() {
		k.stop()
		cancel(context.Canceled)
	}, nil
}
