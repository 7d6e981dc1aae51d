package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// A claim is held by one runner at a time: another runner's claim is
// refused (lease_held, naming the claim) until it is released; the
// claim's context ends with its release; claims are per tenant.
func TestClaimOneHolderAtATime(t *testing.T) {
	store := memstore.New()
	a, b := twoRunners(t, store, func() *agentrt.Agent { return calcAgent(scripted.New("m"), nil) })
	ctx := context.Background()
	held, release, err := a.Claim(ctx, "gateway.source:chat")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = b.Claim(ctx, "gateway.source:chat")
	if agentrt.AsError(err).ErrorCode() != agentrt.CodeLeaseHeld {
		t.Fatalf("a claim another runner holds: %v, want lease_held", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "gateway.source:chat is claimed by another runner: session ") ||
		strings.Count(msg, "is being run by") != 1 || strings.Contains(msg, "leased by") {
		t.Errorf("a claim another runner holds: %q, want its name and who holds it, once", msg)
	}
	if _, rel, err := b.Claim(ctx, "gateway.source:mail"); err != nil {
		t.Fatalf("another name: %v", err)
	} else {
		rel()
	}
	other := session.WithTenant(ctx, "acme")
	if _, rel, err := b.Claim(other, "gateway.source:chat"); err != nil {
		t.Fatalf("the same name of another tenant: %v", err)
	} else {
		rel()
	}
	release()
	if held.Err() == nil {
		t.Error("the claim's context goes on after its release")
	}
	_, rel, err := b.Claim(ctx, "gateway.source:chat")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	rel()
	if _, _, err := a.Claim(ctx, ""); err == nil {
		t.Error("a claim without a name was granted")
	}
}

// A claim whose lease another runner took over (the holder's process
// stalled past its TTL) ends the holder's context with lease_lost.
func TestClaimLost(t *testing.T) {
	store := memstore.New()
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{calcAgent(scripted.New("m"), nil)},
			Owner: owner, LeaseTTL: 30 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		return r
	}
	a, b := mk("host-a:1:a"), mk("host-b:2:b")
	ctx := context.Background()
	held, release, err := a.Claim(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// Take it over behind a's back, as a runner would once a's lease
	// expired: release a's lease through the store, then claim.
	sessions, err := store.ListSessions(ctx, session.ListOptions{})
	if err != nil || len(sessions) != 1 || sessions[0].Lease == nil {
		t.Fatalf("sessions %+v, %v: want the claim's hidden session, leased", sessions, err)
	}
	if err := store.Release(ctx, *sessions[0].Lease); err != nil {
		t.Fatal(err)
	}
	_, rel, err := b.Claim(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	<-held.Done() // a's next renewal finds the lease taken
	if code := agentrt.AsError(context.Cause(held)).ErrorCode(); code != agentrt.CodeLeaseLost {
		t.Errorf("the lost claim's cause: %v (code %q), want lease_lost", context.Cause(held), code)
	}
}

// No turn runs in a hidden session (an agent's rule log, a claim).
func TestHiddenSessionsTakeNoTurn(t *testing.T) {
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{calcAgent(scripted.New("m"), nil)}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	for _, id := range []string{"_rules.calc", "_claim.0123"} {
		_, err := r.Start(context.Background(), id, agentrt.Input{Text: "hi", Agent: "calc"})
		var re *agentrt.Error
		if !errors.As(err, &re) || re.Code != agentrt.CodeProtected {
			t.Errorf("a turn in %s: %v, want code protected", id, err)
		}
	}
}

// A released claim leaves no session behind: the claims of sources
// nobody serves any more do not pile up. A claim whose holder lost it
// does not take the new holder's with it when released.
func TestClaimReleaseLeavesNoSession(t *testing.T) {
	store := memstore.New()
	a, b := twoRunners(t, store, func() *agentrt.Agent { return calcAgent(scripted.New("m"), nil) })
	ctx := context.Background()
	count := func() int {
		t.Helper()
		all, err := store.ListSessions(ctx, session.ListOptions{AllTenants: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	for i := range 10 {
		_, release, err := a.Claim(ctx, fmt.Sprint("gateway.source:chat", i))
		if err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 1 {
			t.Fatalf("%d sessions while claim %d is held, want its one", n, i)
		}
		release()
	}
	if n := count(); n != 0 {
		t.Fatalf("%d sessions after every claim was released, want none", n)
	}
	// a's claim is taken over behind its back: a's release leaves b's.
	_, releaseA, err := a.Claim(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := store.ListSessions(ctx, session.ListOptions{})
	if err := store.Release(ctx, *all[0].Lease); err != nil {
		t.Fatal(err)
	}
	_, releaseB, err := b.Claim(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	releaseA()
	if _, _, err := a.Claim(ctx, "x"); agentrt.AsError(err).ErrorCode() != agentrt.CodeLeaseHeld {
		t.Errorf("a claim of x after the loser's release: %v, want lease_held (b holds it)", err)
	}
	releaseB()
	if n := count(); n != 0 {
		t.Errorf("%d sessions after b's release, want none", n)
	}
}
