package agentrt_test

import (
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// Importing a conversation under the id of a session that exists is
// refused with session_exists, and leaves that session alone: when it
// runs in this runner, its lease (which the import's attempt to create it
// re-granted to the same owner) stays its run's; when it runs in another,
// the refusal is session_exists too, not a store failure.
func TestImportOverARunningSession(t *testing.T) {
	history := []model.Message{model.TextMessage(model.RoleUser, "hi"), model.TextMessage(model.RoleAssistant, "hello")}
	ctx := t.Context()

	t.Run("this runner", func(t *testing.T) {
		e := newEnv(t, nil, agentrt.Config{}, slowAgent())
		h := startInModel(t, e.r, "s1")
		t.Cleanup(h.Cancel)
		before, err := e.store.GetSession(ctx, "s1")
		if err != nil || before.Lease == nil {
			t.Fatalf("the running session: %+v %v", before, err)
		}
		if _, err := e.r.ImportSession(ctx, "calc", "s1", history, "test", nil); errCode(err) != agentrt.CodeSessionExists {
			t.Fatalf("ImportSession over a running session: %v, want session_exists", err)
		}
		s, err := e.store.GetSession(ctx, "s1")
		if err != nil || s.Lease == nil || s.Lease.Token != before.Lease.Token || s.Lease.Owner != e.r.Owner() {
			t.Fatalf("the running session's lease after the import: %+v (%v), want still %+v", s.Lease, err, before.Lease)
		}
	})

	t.Run("another runner", func(t *testing.T) {
		store := memstore.New()
		a, b := twoRunners(t, store, slowAgent)
		startInModel(t, a, "s1")
		if _, err := b.ImportSession(ctx, "calc", "s1", history, "test", nil); errCode(err) != agentrt.CodeSessionExists {
			t.Fatalf("ImportSession over a session another runner runs: %v, want session_exists", err)
		}
		if s, err := store.GetSession(ctx, "s1"); err != nil || s.Status != session.StatusRunning || s.Lease == nil || s.Lease.Owner != a.Owner() {
			t.Fatalf("the running session after the import: %+v %v", s, err)
		}
	})
}
