package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/session"
)

// newMCPCmd is `agentrt mcp`: check connects to each configured MCP
// server and says what it offers, or exactly why it cannot be used;
// serve serves the agents as MCP tools over stdio.
func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "MCP: check the MCP servers of agentrt.yaml, or serve the agents as MCP tools"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "connect to each MCP server and list its tools, or say why it cannot be used",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The config and its servers only: building the app would
			// open (and create) the store, and start the servers twice.
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			m, err := app.NewMCP(cfg)
			if err != nil {
				return err
			}
			if m == nil {
				fmt.Fprintln(g.s.Err, "no mcp_servers in the config")
				return nil
			}
			defer m.Close()
			failed := 0
			for _, name := range m.Names() {
				ts, err := m.Tools(ctx, name)
				if err != nil {
					failed++
					fmt.Fprintf(g.s.Out, "%s: cannot be used: %v\n", name, err)
					continue
				}
				names := make([]string, len(ts))
				for i, t := range ts {
					names[i] = t.Definition().Name
				}
				fmt.Fprintf(g.s.Out, "%s: ok, %d tool(s): %s\n", name, len(ts), strings.Join(names, ", "))
			}
			if failed > 0 {
				return &exitError{code: ExitFailed, msg: fmt.Sprintf("%d of %d MCP server(s) cannot be used", failed, len(m.Names()))}
			}
			return nil
		},
	})
	cmd.AddCommand(newMCPServeCmd(g))
	return cmd
}

// newMCPServeCmd is `agentrt mcp serve`: the agents as MCP tools over
// stdio, for an MCP client that starts agentrt itself (an IDE, a desktop
// assistant). Input goes through the gateway and the log is the store's,
// as with agentrt serve; stdout carries only the protocol.
func newMCPServeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "serve the agents as MCP tools over stdio (each agent a tool: message in, answer out)",
		Long: `Serves each agent of the config as an MCP tool over stdin and stdout, until
the client closes stdin. A call's input is the message and, to continue a
conversation, the session of an earlier result; its result is the answer,
with the session, run, status and usage as structured content. A request
for a person is asked of the client as an elicitation when it supports
them; otherwise the result says how to answer it (agentrt approve or
respond). The same tools are served over HTTP at /v1/mcp by agentrt serve.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				gw, err := a.NeedGateway()
				if err != nil {
					return err
				}
				// The server runs no HTTP here: it is what follows a turn
				// through the gateway (SubmitTurn).
				srv, err := server.New(server.Config{Runner: a.Runner, Gateway: gw, Tenant: session.TenantOf(ctx)})
				if err != nil {
					return err
				}
				s, err := mcp.New(mcp.Config{Server: srv, Tenant: session.TenantOf(ctx), Actor: "mcp"})
				if err != nil {
					return err
				}
				gctx, stop := context.WithCancel(context.WithoutCancel(ctx))
				gwDone := make(chan error, 1)
				go func() { gwDone <- a.RunGateway(gctx) }()
				if g.s.interactive() {
					// A person typed the command a client is meant to
					// start: say what the silence is.
					fmt.Fprintln(g.s.Err, mcpServeHint)
				}
				in := io.NopCloser(g.s.In)
				err = s.Run(ctx, &sdkmcp.IOTransport{Reader: in, Writer: nopCloser{g.s.Out}})
				stop()
				<-gwDone
				if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("mcp serve: %w", err)
				}
				return nil
			})
		},
	}
}

// mcpServeHint is what agentrt mcp serve says when it runs on a terminal.
const mcpServeHint = "agentrt mcp serve: serving the agents as MCP tools over stdin and stdout, for an MCP client that starts this command (Ctrl-D ends)"

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
