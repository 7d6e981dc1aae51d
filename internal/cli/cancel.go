package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
)

func newCancelCmd(g *globals) *cobra.Command {
	var (
		interrupt, asJSON bool
		reason, by, run   string
	)
	cmd := &cobra.Command{
		Use:   "cancel SESSION [--run RUN] [--interrupt] [--reason R] [--by WHO] [--json]",
		Short: "stop a session's run, in this process or another (which acts within about a second), and record who and why",
		Long: `Stops the run of SESSION wherever it runs. By default the run is canceled:
work in flight is canceled, results in hand are stored, and the run ends
canceled (agentrt resume goes on). With --interrupt it stops at its next
safe point and the turn ends interrupted, ready for the next turn. A run
waiting for a person has its requests withdrawn. The request, with --by
(default your user) and --reason, is recorded in the session's log.
With --run, only that run is canceled: if the session's run in progress
is another (its next turn), nothing is stopped and the command says so.
It returns once the run has stopped.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				ctx = agentrt.WithActor(ctx, decider(by))
				stop := a.Runner.Cancel
				switch {
				case interrupt && run != "":
					return usageErr("--run cancels the run it names; an interruption ends whatever turn runs (leave out --run)")
				case interrupt:
					stop = a.Runner.Interrupt
				case run != "":
					stop = func(ctx context.Context, id, reason string) (*agentrt.ControlOutcome, error) {
						return a.Runner.CancelRun(ctx, id, run, reason)
					}
				}
				out, err := stop(ctx, args[0], reason)
				if err != nil {
					if agentrt.AsError(err).ErrorCode() == agentrt.CodeNotFound {
						return usageErr("session %q not found", args[0])
					}
					return err
				}
				if asJSON {
					return json.NewEncoder(g.s.Out).Encode(out)
				}
				verb := map[session.ControlKind]string{session.ControlCancel: "canceled", session.ControlInterrupt: "interrupted"}[out.Control.Kind]
				if !out.Acted {
					fmt.Fprintf(g.s.Err, "session %s: its run ended (%s) before the request reached it\n", args[0], out.Status)
					return nil
				}
				fmt.Fprintf(g.s.Err, "session %s: run %s (status %s); continue with: %s\n", args[0], verb, out.Status,
					g.command(agentrt.NextStep{Kind: agentrt.NextResume, SessionID: args[0]}))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "interrupt the turn at its next safe point rather than cancel the run")
	cmd.Flags().StringVar(&run, "run", "", "cancel only this run (a run id): not the session's next one")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the log)")
	cmd.Flags().StringVar(&by, "by", "", "who asks (recorded in the log; default your user name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	return cmd
}
