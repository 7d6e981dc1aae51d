package pgmem_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/memory/memorytest"
	"github.com/agentrt/agentrt/memory/pgmem"
)

func TestConformance(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store {
		dsn, _ := pgtest.Schema(t)
		s, err := pgmem.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
