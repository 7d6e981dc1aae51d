package agentrt_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
)

// indexedStore opens a store that keeps the request and lease indexes,
// its leases on clock now.
type indexedStore struct {
	name string
	open func(t *testing.T, now func() time.Time) session.Store
}

// indexedStores are the stores of this module, each with its indexes.
// Postgres needs AGENTRT_TEST_POSTGRES (see pgtest).
func indexedStores() []indexedStore {
	return []indexedStore{
		{"memstore", func(t *testing.T, now func() time.Time) session.Store { return memstore.New(memstore.WithClock(now)) }},
		{"sqlite", func(t *testing.T, now func() time.Time) session.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.WithClock(now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(t *testing.T, now func() time.Time) session.Store {
			dsn, _ := pgtest.Schema(t)
			st, err := postgres.Open(t.Context(), dsn, postgres.WithClock(now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	}
}

// A run that waits for a person has its request in the tenant's pending
// requests, as its event asked it, until it is resolved; another tenant
// sees none.
func TestPendingRequestsOfARun(t *testing.T) {
	for _, is := range indexedStores() {
		t.Run(is.name, func(t *testing.T) {
			store := is.open(t, time.Now)
			var runs atomic.Int32
			m := scripted.New("m",
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
				scripted.Reply{Text: "deployed", Expect: &scripted.Expect{LastToolResultContains: "deployed to prod"}},
			)
			e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
			ctx := context.Background()
			id := e.session(t, "calc")
			if got, err := e.r.PendingRequests(ctx, session.RequestListOptions{}); err != nil || len(got) != 0 {
				t.Fatalf("pending before the run: %+v, %v", got, err)
			}
			res := e.run(t, id, "deploy")
			if res.Status != session.StatusWaiting {
				t.Fatalf("the run: %s, want waiting", res.Status)
			}
			var asked *session.Event
			for _, ev := range res.Events {
				if _, ok := ev.Data.(*session.InputRequired); ok {
					asked = ev
				}
			}
			want := []session.PendingRequest{{Tenant: session.DefaultTenant, SessionID: id, Agent: "calc", Seq: asked.Seq,
				Asked: asked.Time.Truncate(time.Microsecond), Request: *asked.Data.(*session.InputRequired)}}
			got, err := e.r.PendingRequests(ctx, session.RequestListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("pending while the run waits (-want +got):\n%s", diff)
			}
			if c := got[0].Request.Calls; len(c) != 1 || c[0].Name != "deploy" || string(c[0].Arguments) != `{"env":"prod"}` {
				t.Errorf("the request's calls: %+v", c)
			}
			for _, opt := range []session.RequestListOptions{{SessionID: id}, {Agent: "calc"}, {Kind: session.RequestApproval}} {
				if got, err := e.r.PendingRequests(ctx, opt); err != nil || len(got) != 1 {
					t.Errorf("PendingRequests(%+v): %+v, %v", opt, got, err)
				}
			}
			if got, err := e.r.PendingRequests(ctx, session.RequestListOptions{Kind: session.RequestPrompt}); err != nil || len(got) != 0 {
				t.Errorf("pending prompts: %+v, %v", got, err)
			}
			if got, err := e.r.PendingRequests(session.WithTenant(ctx, "acme"), session.RequestListOptions{}); err != nil || len(got) != 0 {
				t.Errorf("acme's pending: %+v, %v", got, err)
			}
			if _, err := e.r.Resolve(ctx, id, got[0].Request.RequestID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana"}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.r.PendingRequests(ctx, session.RequestListOptions{}); err != nil || len(got) != 0 {
				t.Errorf("pending after Resolve: %+v, %v", got, err)
			}
			if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 1 {
				t.Errorf("after the approval: %s, deploy ran %d times", res.Status, runs.Load())
			}
		})
	}
}

// PendingRequests says what is wrong with its options, and that a store
// without the index cannot list them.
func TestPendingRequestsErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t)))
	for _, opt := range []session.RequestListOptions{{Kind: "approve"}, {Limit: -1}, {Limit: agentrt.MaxRequestPage + 1}} {
		if _, err := e.r.PendingRequests(ctx, opt); errCode(err) != agentrt.CodeInput {
			t.Errorf("PendingRequests(%+v): %v, want bad_input", opt, err)
		}
	}
	if _, err := e.r.PendingRequests(ctx, session.RequestListOptions{Limit: agentrt.MaxRequestPage}); err != nil {
		t.Errorf("a page of MaxRequestPage: %v", err)
	}
	plain := newEnv(t, plainStore{memstore.New()}, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t)))
	_, err := plain.r.PendingRequests(ctx, session.RequestListOptions{})
	if errCode(err) != agentrt.CodeNoRequestIndex {
		t.Fatalf("PendingRequests of a store without the index: %v, want no_request_index", err)
	}
	if info, ok := agentrt.LookupCode(agentrt.CodeNoRequestIndex); !ok || info.HTTP != 501 {
		t.Errorf("the catalog's no_request_index: %+v", info)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.r.PendingRequests(ctx2, session.RequestListOptions{}); errCode(err) != agentrt.CodeCanceled {
		t.Errorf("PendingRequests with a canceled context: %v, want canceled", err)
	}
}

// A fork of a waiting session has its pending requests, as its own; a
// fork taken before the question has none.
func TestPendingRequestsOfAFork(t *testing.T) {
	for _, is := range indexedStores() {
		t.Run(is.name, func(t *testing.T) {
			var runs atomic.Int32
			m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}})
			e := newEnv(t, is.open(t, time.Now), agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
			ctx := context.Background()
			id := e.session(t, "calc")
			res := e.run(t, id, "deploy")
			last := res.Events[len(res.Events)-1].Seq
			if _, err := e.r.Fork(ctx, id, last, agentrt.ForkOptions{ID: "whole"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.r.Fork(ctx, id, 1, agentrt.ForkOptions{ID: "early"}); err != nil {
				t.Fatal(err)
			}
			got, err := e.r.PendingRequests(ctx, session.RequestListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var where []string
			for _, p := range got {
				where = append(where, p.SessionID)
			}
			if diff := cmp.Diff([]string{id, "whole"}, where, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("the sessions with a pending request (-want +got):\n%s", diff)
			}
			if err := e.r.DeleteSession(ctx, "whole", false); err != nil {
				t.Fatal(err)
			}
			if got, err := e.r.PendingRequests(ctx, session.RequestListOptions{SessionID: "whole"}); err != nil || len(got) != 0 {
				t.Errorf("the deleted fork's pending requests: %+v, %v", got, err)
			}
		})
	}
}
