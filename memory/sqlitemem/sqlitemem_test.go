package sqlitemem_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/memory/memorytest"
	"github.com/agentrt/agentrt/memory/sqlitemem"
	"github.com/agentrt/agentrt/session/sqlite"
)

func TestConformance(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store {
		s, err := sqlitemem.Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// The memory tables live beside the sessions' in one file, and neither
// disturbs the other's schema.
func TestBesideTheSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrt.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := sqlitemem.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Add(t.Context(), memory.Item{Text: "kept beside the sessions", Scope: memory.Scope{Agent: "a"}}); err != nil {
		t.Fatal(err)
	}
	st2, err := sqlite.Open(t.Context(), path) // the sessions' migrations still pass
	if err != nil {
		t.Fatal(err)
	}
	st2.Close()
	m2, err := sqlitemem.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if hits, err := m2.Search(t.Context(), memory.Query{Text: "sessions", Scope: memory.Scope{Agent: "a"}}); err != nil || len(hits) != 1 {
		t.Fatalf("after reopening: %+v %v", hits, err)
	}
}
