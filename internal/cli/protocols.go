package cli

import (
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/agui"
)

// mountProtocols mounts the protocol adapters (OpenAI-compatible, AG-UI,
// A2A, MCP) on srv: handlers over the same gateway, log, tenants and
// human requests as the rest of the API.
func mountProtocols(srv *server.Server, a *app.App) error {
	_, _ = srv, a
	if err := agui.Mount(srv); err != nil {
		return err
	}
	return nil
}
