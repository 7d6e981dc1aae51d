package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/internal/app"
)

// newChannelsCmd is `agentrt channels`: check calls each configured
// channel's platform once and says whether its credentials and URLs work.
func newChannelsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "channels", Short: "the chat channels of agentrt.yaml (docs/channels.md)"}
	var timeout time.Duration
	check := &cobra.Command{
		Use:   "check",
		Short: "call each channel's platform: do its credentials and URLs work?",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The config only: the platforms are called, the store is not
			// opened.
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			names := cfg.ChannelNames()
			if len(names) == 0 {
				fmt.Fprintln(g.s.Err, "no channels in the config")
				return nil
			}
			if err := cfg.CheckChannels(); err != nil {
				return err
			}
			failed := 0
			for _, name := range names {
				cc := cfg.Channels[name]
				ch, err := app.NewChannel(cc, nil)
				if err == nil {
					c, ok := ch.(channel.Checker)
					if !ok {
						fmt.Fprintf(g.s.Out, "%s (%s): nothing to check without a call of the platform\n", name, cc.Kind)
						continue
					}
					ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
					var what string
					what, err = c.Check(ctx)
					cancel()
					if err == nil {
						fmt.Fprintf(g.s.Out, "%s (%s): ok, %s; the platform posts to /v1/channels/%s/…\n", name, cc.Kind, what, name)
						continue
					}
				}
				failed++
				fmt.Fprintf(g.s.Out, "%s (%s): does not work: %v\n", name, cc.Kind, err)
			}
			if failed > 0 {
				return &exitError{code: ExitFailed, msg: fmt.Sprintf("%d of %d channel(s) do not work", failed, len(names))}
			}
			return nil
		},
	}
	check.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long each platform has to answer")
	cmd.AddCommand(check)
	return cmd
}
