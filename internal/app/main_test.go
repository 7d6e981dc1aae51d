package app

import (
	"os"
	"testing"

	"github.com/agentrt/agentrt/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfChild() // this binary is also a stdio MCP server for the tests
	os.Exit(m.Run())
}
