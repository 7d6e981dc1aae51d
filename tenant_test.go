package agentrt_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// Tenants never see each other: the same id is two sessions, and a run,
// a resume, a watch, a resolution from another tenant find nothing.
// Recover resumes the crashed sessions of every tenant.
func TestTenants(t *testing.T) {
	store := memstore.New()
	m := scripted.New("m", scripted.Reply{Text: "for acme"}, scripted.Reply{Text: "for globex"})
	e := newEnv(t, store, agentrt.Config{}, calcAgent(m, nil))
	acme := session.WithTenant(context.Background(), "acme")
	globex := session.WithTenant(context.Background(), "globex")
	for _, ctx := range []context.Context{acme, globex} {
		if _, err := e.r.CreateSession(ctx, "calc", "shared-id", nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := agentrt.Collect(e.r.Run(acme, "shared-id", agentrt.Input{Text: "hi"}))
	if err != nil || res.Text != "for acme" {
		t.Fatalf("acme's run: %+v %v", res, err)
	}
	if s, _ := store.GetSession(globex, "shared-id"); s.LastSeq != 0 {
		t.Errorf("acme's run wrote into globex's session: %+v", s)
	}
	if _, err := agentrt.Collect(e.r.Resume(context.Background(), "shared-id")); errCode(err) != "not_found" {
		t.Errorf("resume in the default tenant: %v", err)
	}
	for _, err := range e.r.Watch(session.WithTenant(context.Background(), "initech"), "shared-id", 0) {
		if errCode(err) != "not_found" {
			t.Errorf("watch from another tenant: %v", err)
		}
	}
	// A crashed session in each tenant: Recover finds both.
	crashedIn := func(ctx context.Context, id string) {
		var faults storetest.Faults
		g := newGate()
		close(g.release)
		ce := newEnv(t, storetest.Faulty(store, &faults), agentrt.Config{}, calcAgent(scripted.New("m", gateCall()), registry(t, g.tool())))
		if _, err := ce.r.CreateSession(ctx, "calc", id, nil); err != nil {
			t.Fatal(err)
		}
		faults.FailCommit(3, false)
		agentrt.Collect(ce.r.Run(ctx, id, agentrt.Input{Text: "go"}))
	}
	crashedIn(acme, "c1")
	crashedIn(globex, "c1")
	for _, ctx := range []context.Context{acme, globex} {
		if s, err := store.GetSession(ctx, "c1"); err != nil || s.Status != session.StatusRunning {
			t.Fatalf("%s/c1 after the crash: %+v %v", session.TenantOf(ctx), s, err)
		}
	}
	g := newGate()
	close(g.release)
	re := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "ok"}, scripted.Reply{Text: "ok"}), registry(t, g.tool())))
	runs, err := re.r.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range runs {
		if res, err := h.Wait(context.Background()); err != nil || res.Status != session.StatusDone {
			t.Errorf("%s/%s: %+v %v", h.Tenant(), h.SessionID(), res, err)
		}
		got = append(got, h.Tenant()+"/"+h.SessionID())
	}
	if diff := cmp.Diff([]string{"acme/c1", "globex/c1"}, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("recovered (-want +got):\n%s", diff)
	}
}
