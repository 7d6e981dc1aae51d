package memory_test

import (
	"testing"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/memory/memorytest"
)

func TestInMemoryConformance(t *testing.T) {
	memorytest.Run(t, func(*testing.T) memory.Store { return memory.NewInMemory() })
}
