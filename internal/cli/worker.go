package cli

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/spf13/cobra"
)

func newWorkerCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "step the agents' runs on the engine's task queue until Ctrl-C (engine: temporal; see docs/temporal.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.opts.RunWorker == nil {
				return fmt.Errorf("agentrt worker needs the agentrt built with Temporal (the temporal module's: github.com/agentrt/agentrt/temporal/cmd/agentrt)")
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if cfg.Engine != config.EngineTemporal {
				return usageErr("agentrt worker steps the runs of engine: temporal, and %s says engine: %q", cfgName(cfg), cfg.Engine)
			}
			g.opts.Worker = true
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				for _, n := range a.Notices {
					fmt.Fprintln(g.s.Err, n)
				}
				fmt.Fprintf(g.s.Err, "agentrt worker: stepping the runs of task queue %s on %s, store %s (Ctrl-C stops)\n",
					orDefault(cfg.Temporal.TaskQueue, "agentrt"), orDefault(cfg.Temporal.Address, "127.0.0.1:7233"), postgres.Redact(a.StoreDSN))
				if err := g.opts.RunWorker(ctx, a); err != nil {
					return err
				}
				fmt.Fprintln(g.s.Err, "agentrt worker: stopped")
				return nil
			})
		},
	}
}

func cfgName(cfg *config.Config) string {
	if f := cfg.File(); f != "" {
		return f
	}
	return "the built-in config"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
