package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/internal/app"
)

// newMCPCmd is `agentrt mcp check`: connect to each configured MCP server
// and say what it offers, or exactly why it cannot be used.
func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "the MCP servers of agentrt.yaml"}
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
	return cmd
}
