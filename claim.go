package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

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
// out) that holds no events, made when the claim is taken and deleted
// when it is released (a dead owner's stays until the next claim of the
// name takes it over).
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
	k, err := r.takeClaim(ctx, id, name)
	if err != nil {
		cancel(err)
		if ae := AsError(err); ae.Code == CodeLeaseHeld {
			return nil, nil, &Error{Kind: FailState, Code: CodeLeaseHeld,
				Msg: name + " is claimed by another runner", Err: ae.Err} // which, and until when
		}
		return nil, nil, err
	}
	k.watch(cancel)
	return cctx, func() {
		r.dropClaim(k)
		cancel(context.Canceled)
	}, nil
}

// dropClaim ends the claim k keeps: its session goes with it where the
// store can (session.Dropper), so that the claims of sources no longer
// served do not pile up — a busy gateway's were about half the rows of
// its store — else its lease is released. The next claim of the name
// makes the session anew; Dropper says how a holder of the dropped one
// is fenced off.
func (r *Runner) dropClaim(k *leaseKeeper) {
	d, ok := r.leaser.(session.Dropper)
	if !ok {
		k.stop()
		return
	}
	if !k.halt() {
		return // lost: another runner holds it now
	}
	k.mu.Lock()
	l := k.lease
	k.mu.Unlock()
	// Not the claim's context, which may be canceled: the claim must
	// end. If the drop fails, the lease is released as ever; if that
	// fails too, it expires.
	ctx := session.WithTenant(context.Background(), k.tenant)
	if err := d.Drop(ctx, l); err != nil {
		_ = r.leaser.Release(ctx, l)
	}
}

// takeClaim takes the lease of claim session id, creating the session
// first if need be: in one write where the store can
// (session.LeasedCreator), the claim's session then existing or not. A
// dead owner's lease of this host is taken over, as acquireLease does.
func (r *Runner) takeClaim(ctx context.Context, id, name string) (*leaseKeeper, error) {
	now := r.now()
	s := &session.Session{ID: id, Status: session.StatusIdle,
		Metadata: map[string]string{"kind": "claim", "name": name}, CreatedAt: now, UpdatedAt: now}
	lc, ok := r.store.(session.LeasedCreator)
	if !ok {
		k, err := r.acquireLease(ctx, id, false, nil)
		if AsError(err).Code == CodeNotFound {
			if err := r.store.CreateSession(ctx, s); err != nil && !errors.Is(err, session.ErrExists) {
				return nil, &Error{Kind: FailStore, Msg: "create the claim " + name, Err: err}
			}
			k, err = r.acquireLease(ctx, id, false, nil)
		}
		return k, err
	}
	for tries := 1; ; tries++ {
		_, l, _, err := lc.CreateOrAcquire(ctx, s, r.owner, r.leaseTTL)
		if err == nil {
			return r.keepLease(ctx, l, nil), nil
		}
		var held *session.LeaseHeldError
		switch {
		case errors.Is(err, session.ErrNotFound) && tries < 3:
			// Its holder released it, dropping its session, between our
			// finding the session and acquiring it: make it anew.
			continue
		case !errors.As(err, &held):
			return nil, &Error{Kind: FailStore, Msg: "take the claim " + name, Err: err}
		case !ownerDead(held.Lease.Owner):
			return nil, leaseHeld(id, held.Lease)
		}
		// Its process is gone: nothing can renew it.
		if rerr := r.leaser.Release(ctx, held.Lease); rerr != nil && !errors.Is(rerr, session.ErrFenced) {
			return nil, &Error{Kind: FailStore, Msg: "release the dead owner's claim " + name, Err: rerr}
		}
	}
}
