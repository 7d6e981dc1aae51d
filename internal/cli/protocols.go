package cli

import (
	"log/slog"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/server/openai"
)

// mountProtocols mounts the protocol adapters (OpenAI-compatible, AG-UI,
// A2A, MCP) on srv: handlers over the same gateway, log, tenants and
// human requests as the rest of the API.
func mountProtocols(srv *server.Server, a *app.App, log *slog.Logger) error {
	if _, err := openai.Mount(srv, openai.Config{}); err != nil {
		return err
	}
	if err := agui.Mount(srv); err != nil {
		return err
	}
	ac := a.Config.Server.A2A
	if err := a2a.Mount(srv, a2a.Config{Log: log, PublicURL: ac.PublicURL,
		AllowPrivateWebhooks: ac.AllowPrivateWebhooks != nil && *ac.AllowPrivateWebhooks}); err != nil {
		return err
	}
	if err := mcp.Mount(srv, mcp.Config{}); err != nil {
		return err
	}
	return nil
}
