package agentrt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session/memstore"
)

// failingDelete is a store whose DeleteSession fails.
type failingDelete struct{ *memstore.Store }

func (failingDelete) DeleteSession(context.Context, string) error {
	return errors.New("the database is read-only today")
}

// A deletion that fails lets go of the lease it took to delete the
// session: the session is not left leased, for a lease TTL, to a runner
// that does nothing with it (another process's run or resolution would
// be refused as lease_held meanwhile).
func TestFailedDeleteLetsGoOfTheSession(t *testing.T) {
	st := failingDelete{memstore.New()}
	e := newEnv(t, st, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil))
	ctx := t.Context()
	if _, err := e.r.Send(ctx, "s1", agentrt.Input{Text: "hi", Agent: "calc"}); err != nil {
		t.Fatal(err)
	}
	if err := e.r.DeleteSession(ctx, "s1", false); err == nil {
		t.Fatal("DeleteSession succeeded on a store that cannot delete")
	}
	s, err := st.GetSession(ctx, "s1")
	if err != nil || s.Lease != nil {
		t.Fatalf("after the failed deletion: lease %+v (%v), want none", s.Lease, err)
	}
}
