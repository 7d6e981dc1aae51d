package agentrt_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// gatedStore holds the first CreateOrAcquire's caller after its write
// until gate is closed.
type gatedStore struct {
	*memstore.Store
	once    sync.Once
	written chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) CreateOrAcquire(ctx context.Context, s *session.Session, owner string, ttl time.Duration) (*session.Session, session.Lease, bool, error) {
	got, l, made, err := g.Store.CreateOrAcquire(ctx, s, owner, ttl)
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.written)
		<-g.gate
	}
	return got, l, made, err
}

// Two turns on a new session in one runner: the session is created and
// its lease taken only once the first turn has claimed it, so the second
// is told the session is busy instead of running in between (found by
// review: it ran to its end, released the lease, and the first then
// failed with a conflict, holding a lease already given up).
func TestCreatedSessionIsClaimedFirst(t *testing.T) {
	st := &gatedStore{Store: memstore.New(), written: make(chan struct{}), gate: make(chan struct{})}
	e := newEnv(t, st, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "one"}, scripted.Reply{Text: "two"}), registry(t)))
	ctx := context.Background()
	var (
		resA *agentrt.Result
		errA error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		resA, errA = e.r.Send(ctx, "chat", agentrt.Input{Text: "first", Agent: "calc"})
	}()
	<-st.written
	_, errB := e.r.Send(ctx, "chat", agentrt.Input{Text: "second", Agent: "calc"})
	var re *agentrt.Error
	if !errors.As(errB, &re) || re.Code != "busy" {
		t.Errorf("the second turn while the first creates the session: %v, want busy", errB)
	}
	close(st.gate)
	<-done
	if errA != nil || resA.Text != "one" {
		t.Fatalf("the first turn: %+v, %v", resA, errA)
	}
	s, err := e.store.GetSession(ctx, "chat")
	if err != nil || s.Lease != nil || s.Status != session.StatusDone {
		t.Fatalf("the session after: %+v, %v; want done, its lease released", s, err)
	}
	// The second turn runs now, after the first.
	if res, err := e.r.Send(ctx, "chat", agentrt.Input{Text: "second", Agent: "calc"}); err != nil || res.Text != "two" {
		t.Fatalf("the second turn after: %+v, %v", res, err)
	}
}
