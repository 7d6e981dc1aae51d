package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
)

// Shell completion (agentrt completion bash|zsh|fish|powershell): cobra's
// hidden __complete command asks these functions for the words that fit
// where the cursor is. They read, and never write: the agents from the
// config, the sessions and their pending requests from the store, of the
// tenant --tenant (or the config) names. They open no model, no MCP
// server and no memory, so that a Tab answers at once; whatever fails
// completes nothing.

// completeTimeout bounds a completion's reads: a shell waits for them.
const completeTimeout = 2 * time.Second

// completeLimit is how many of the newest sessions a completion offers.
const completeLimit = 500

// completeAgents completes an agent's name.
func (g *globals) completeAgents(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, name := range cfg.AgentNames() {
		if strings.HasPrefix(name, prefix) {
			out = append(out, cobra.CompletionWithDesc(name, cfg.Agents[name].Description))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSessions completes a session's id, newest first, each with its
// agent and status.
func (g *globals) completeSessions(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	_ = g.withSessions(cmd, func(ctx context.Context, r *agentrt.Runner) error {
		ss, _, err := r.ListSessions(ctx, session.ListOptions{Limit: completeLimit})
		for _, s := range ss {
			if strings.HasPrefix(s.ID, prefix) {
				out = append(out, cobra.CompletionWithDesc(s.ID, fmt.Sprintf("%s, %s", s.Agent, s.Status)))
			}
		}
		return err
	})
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completeSessionThenRequest completes a session's id, then the id of one
// of its pending requests (approve, respond).
func (g *globals) completeSessionThenRequest(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return g.completeSessions(cmd, args, prefix)
	case 1:
	default:
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	_ = g.withSessions(cmd, func(ctx context.Context, r *agentrt.Runner) error {
		st, err := r.Load(ctx, args[0])
		if err != nil {
			return err
		}
		for _, q := range st.Requests {
			if strings.HasPrefix(q.ID, prefix) {
				out = append(out, cobra.CompletionWithDesc(q.ID, fmt.Sprintf("%s: %s", q.Kind, oneLineText(q.Question, 60))))
			}
		}
		return nil
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeFirstSession completes a session's id as the first argument
// only.
func (g *globals) completeFirstSession(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return g.completeSessions(cmd, args, prefix)
}

// withSessions runs f with a runner of no agents over the store, opened
// for reading, and the context of the tenant the flags name.
func (g *globals) withSessions(cmd *cobra.Command, f func(ctx context.Context, r *agentrt.Runner) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	dsn := cfg.Store
	if g.store != "" {
		dsn = g.store
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
	defer cancel()
	st, err := app.OpenReading(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := agentrt.NewRunner(agentrt.Config{Store: st})
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	tenant := cmpOr(g.tenant, cmpOr(cfg.Tenant, session.DefaultTenant))
	if session.CheckTenant(tenant) != nil {
		return fmt.Errorf("bad tenant %q", tenant)
	}
	return f(session.WithTenant(ctx, tenant), r)
}

// completeFlag registers complete for the flag called name of cmd.
func completeFlag(cmd *cobra.Command, name string, complete cobra.CompletionFunc) {
	if err := cmd.RegisterFlagCompletionFunc(name, complete); err != nil {
		panic(fmt.Sprintf("completion of --%s of %s: %v", name, cmd.Name(), err)) // a programmer's error, at start
	}
}

// addCompletions gives root's commands their completions: the commands
// named by path (as agentrt help lists them) get args completed by how,
// and every --agent and --session flag the agents' names and the
// sessions' ids.
func (g *globals) addCompletions(root *cobra.Command) {
	args := map[string]cobra.CompletionFunc{
		"resume":          g.completeFirstSession,
		"cancel":          g.completeFirstSession,
		"replay":          g.completeFirstSession,
		"approve":         g.completeSessionThenRequest,
		"respond":         g.completeSessionThenRequest,
		"sessions show":   g.completeFirstSession,
		"sessions events": g.completeFirstSession,
		"sessions delete": g.completeFirstSession,
		"sessions fork":   g.completeFirstSession,
		"rules list":      g.completeFirstSession,
		"rules revoke":    g.completeFirstSession,
	}
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		if how, ok := args[path]; ok {
			c.ValidArgsFunction = how
			delete(args, path)
		}
		if c.Flags().Lookup("agent") != nil {
			completeFlag(c, "agent", g.completeAgents)
		}
		if c.Flags().Lookup("session") != nil {
			completeFlag(c, "session", g.completeSessions)
		}
		for _, sub := range c.Commands() {
			walk(sub, strings.TrimSpace(path+" "+sub.Name()))
		}
	}
	walk(root, "")
	for path := range args {
		panic("completion of a command that does not exist: " + path) // a programmer's error, at start
	}
}
