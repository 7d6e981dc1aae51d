package cli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/memory"
)

// newMemoryCmd is `agentrt memory`: what agents remember, for people.
func newMemoryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "what agents remember: add, search, list, delete (their retrieve tool searches it)",
	}
	var agent, sess string
	var meta []string
	var limit int
	scope := func() (memory.Scope, error) {
		if agent == "" {
			return memory.Scope{}, usageErr("name the agent with --agent")
		}
		return memory.Scope{Agent: agent, Session: sess}, nil
	}
	scopeFlags := func(c *cobra.Command) {
		c.Flags().StringVar(&agent, "agent", "", "the agent whose memory it is (required)")
		c.Flags().StringVar(&sess, "session", "", "one session's memory rather than the agent's")
	}
	add := &cobra.Command{
		Use:   "add --agent A [--session S] [--meta k=v]... TEXT",
		Short: "remember a text",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scope()
			if err != nil {
				return err
			}
			md := map[string]string{}
			for _, kv := range meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErr("--meta %q: want key=value", kv)
				}
				md[k] = v
			}
			return withMemory(g, cmd, func(ctx context.Context, a *app.App, m memory.Store) error {
				// What is remembered for a name nothing runs under would
				// never be found again.
				if err := checkScope(ctx, a, sc); err != nil {
					return err
				}
				it, err := m.Add(ctx, memory.Item{Text: strings.Join(args, " "), Scope: sc, Metadata: md})
				if err != nil {
					return err
				}
				fmt.Fprintln(g.s.Out, it.ID)
				return nil
			})
		},
	}
	scopeFlags(add)
	add.Flags().StringArrayVar(&meta, "meta", nil, "metadata, key=value (repeatable)")
	search := &cobra.Command{
		Use:   "search --agent A [--session S] [--limit N] QUERY",
		Short: "search what an agent remembers, as its retrieve tool does",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scope()
			if err != nil {
				return err
			}
			return withMemory(g, cmd, func(ctx context.Context, _ *app.App, m memory.Store) error {
				hits, err := m.Search(ctx, memory.Query{Text: strings.Join(args, " "), Scope: sc, Limit: limit})
				if err != nil {
					return usageErr("%v", err)
				}
				if len(hits) == 0 {
					fmt.Fprintln(g.s.Err, "nothing found")
				}
				for _, h := range hits {
					fmt.Fprintf(g.s.Out, "%s  %.3g  %s\n", h.ID, h.Score, flat(h.Text))
				}
				return nil
			})
		},
	}
	scopeFlags(search)
	search.Flags().IntVar(&limit, "limit", 0, "how many at most (default 5, at most 50)")
	list := &cobra.Command{
		Use:   "list --agent A [--session S]",
		Short: "list what an agent (or one of its sessions) remembers, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scope()
			if err != nil {
				return err
			}
			return withMemory(g, cmd, func(ctx context.Context, _ *app.App, m memory.Store) error {
				items, err := m.List(ctx, sc, limit)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(g.s.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tCREATED\tTEXT")
				for _, it := range items {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", it.ID, it.Created.Local().Format(time.DateTime), flat(it.Text))
				}
				return tw.Flush()
			})
		},
	}
	scopeFlags(list)
	list.Flags().IntVar(&limit, "limit", 0, "how many at most (default 50)")
	del := &cobra.Command{
		Use:   "delete --agent A [--session S] ID",
		Short: "forget one item of an agent's (or one of its sessions') memory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scope()
			if err != nil {
				return err
			}
			return withMemory(g, cmd, func(ctx context.Context, _ *app.App, m memory.Store) error {
				// The item must be in the scope named, as for the other
				// commands: an id copied from another agent's list is
				// not deleted by mistake.
				items, err := m.List(ctx, sc, math.MaxInt32)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(items, func(it memory.Item) bool { return it.ID == args[0] }) {
					return usageErr("%s has no item %s (agentrt memory list %s lists them)", describeScope(sc), args[0], scopeArgs(sc))
				}
				if err := m.Delete(ctx, args[0]); err != nil {
					return usageErr("%v", err)
				}
				fmt.Fprintf(g.s.Err, "deleted %s\n", args[0])
				return nil
			})
		},
	}
	scopeFlags(del)
	cmd.AddCommand(add, search, list, del)
	return cmd
}

func flat(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// withMemory runs f with the memory of the app's database.
func withMemory(g *globals, cmd *cobra.Command, f func(ctx context.Context, a *app.App, m memory.Store) error) error {
	return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
		m, err := a.OpenMemory(ctx)
		if err != nil {
			return err
		}
		return f(ctx, a, m)
	})
}

// checkScope checks that sc names a configured agent and, if it names a
// session, a session of that agent.
func checkScope(ctx context.Context, a *app.App, sc memory.Scope) error {
	if _, ok := a.Runner.Agent(sc.Agent); !ok {
		return usageErr("unknown agent %q (configured: %s)", sc.Agent, strings.Join(a.Runner.AgentNames(), ", "))
	}
	if sc.Session == "" {
		return nil
	}
	s, err := a.Store.GetSession(ctx, sc.Session)
	if err != nil {
		return notFound(sc.Session, err)
	}
	if s.Agent != sc.Agent {
		return usageErr("session %q belongs to agent %q, not %q", sc.Session, s.Agent, sc.Agent)
	}
	return nil
}

// describeScope names a memory scope for people.
func describeScope(sc memory.Scope) string {
	if sc.Session != "" {
		return fmt.Sprintf("the memory of agent %s in session %s", sc.Agent, sc.Session)
	}
	return fmt.Sprintf("agent %s's memory", sc.Agent)
}

// scopeArgs are the flags that name sc.
func scopeArgs(sc memory.Scope) string {
	if sc.Session != "" {
		return "--agent " + sc.Agent + " --session " + sc.Session
	}
	return "--agent " + sc.Agent
}
