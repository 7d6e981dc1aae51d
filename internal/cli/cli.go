// Package cli implements the agentrt command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
)

// Exit codes: those of a run's outcome (agentrt.DescribeOutcome), and bad
// usage.
const (
	ExitOK          = agentrt.ExitDone
	ExitFailed      = agentrt.ExitFailed
	ExitUsage       = 2
	ExitWaiting     = agentrt.ExitWaiting
	ExitPaused      = agentrt.ExitPaused
	ExitInterrupted = agentrt.ExitInterrupted // Ctrl-C
)

// Streams are the command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// exitError carries an exit code and a message for stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

type globals struct {
	config string
	store  string
	tenant string
	s      Streams
	opts   app.Options
	lines  *lineReader // the person's answers on a terminal; nil until asked
	// started is set once flags and arguments are parsed and a command
	// runs; errors before that are usage errors from cobra.
	started bool
}

func (g *globals) options() app.Options {
	o := g.opts
	o.ConfigPath = g.config
	o.StoreDSN = g.store
	return o
}

// loadConfig loads the config; a --config file that does not exist is a
// usage error.
func (g *globals) loadConfig() (*config.Config, error) {
	cfg, err := app.LoadConfig(g.options())
	if err != nil && g.config != "" && errors.Is(err, fs.ErrNotExist) {
		return nil, usageErr("config file %s does not exist", g.config)
	}
	return cfg, err
}

// open builds the app. Its notices (such as the demo model's) are printed
// by the printer of a run, once the run has started, so that a usage
// error stays the only line on stderr.
func (g *globals) open(ctx context.Context) (*app.App, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	return app.Build(ctx, cfg, g.options())
}

// withApp opens the app for cmd, runs f with it and closes it.
func (g *globals) withApp(cmd *cobra.Command, f func(ctx context.Context, a *app.App) error) error {
	ctx := cmd.Context()
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	tenant := g.tenant
	if tenant == "" {
		tenant = a.Config.Tenant
	}
	if tenant == "" {
		tenant = session.DefaultTenant
	}
	if err := session.CheckTenant(tenant); err != nil {
		return usageErr("--tenant: %v", err)
	}
	return f(session.WithTenant(ctx, tenant), a)
}

// withAppReading is withApp for a command that only reads sessions: a
// SQLite store this process may not write is opened read-only.
func (g *globals) withAppReading(cmd *cobra.Command, f func(ctx context.Context, a *app.App) error) error {
	g.opts.ReadOnly = true
	return g.withApp(cmd, f)
}

// Main runs the CLI with args and returns the exit code.
func Main(ctx context.Context, args []string, s Streams) int {
	return MainWith(ctx, args, s, app.Options{})
}

// MainWith is Main with extra app options (tests and embedders add tools
// or models this way).
func MainWith(ctx context.Context, args []string, s Streams, opts app.Options) int {
	g := &globals{s: s, opts: opts}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if g.lines != nil {
		g.lines.close()
	}
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(s.Err, "agentrt: "+ee.msg)
		}
		return ee.code
	}
	var ce *config.Error
	var re *agentrt.Error
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(s.Err, "agentrt: "+oneLine(err))
		return ExitUsage
	case errors.As(err, &re) && (re.Kind == agentrt.FailInput || re.Kind == agentrt.FailState):
		fmt.Fprintln(s.Err, "agentrt: "+oneLine(err))
		return ExitUsage
	case !g.started && isCobraUsage(err):
		// Only before a command runs: a runtime error may well contain
		// "invalid argument" (EINVAL) without being a usage error.
		fmt.Fprintln(s.Err, "agentrt: "+usageLine(err))
		if cmd != nil && !strings.HasPrefix(err.Error(), "unknown command") {
			fmt.Fprintln(s.Err, "usage: "+cmd.UseLine())
		}
		return ExitUsage
	}
	fmt.Fprintln(s.Err, "agentrt: "+oneLine(err))
	return ExitFailed
}

// usageLine is cobra's usage error on one line: "unknown command "x" for
// "agentrt"; did you mean sessions?" rather than its paragraph.
func usageLine(err error) string {
	msg, suggest, ok := strings.Cut(err.Error(), "Did you mean this?")
	if !ok {
		return oneLine(err)
	}
	var names []string
	for f := range strings.FieldsSeq(suggest) {
		names = append(names, f)
	}
	return strings.TrimSpace(msg) + "; did you mean " + strings.Join(names, " or ") + "?"
}

func oneLine(err error) string {
	var ce *config.Error
	if errors.As(err, &ce) {
		return err.Error() // one problem per line, each self-contained
	}
	var re *agentrt.Error
	if errors.As(err, &re) && re.Code == agentrt.CodeNotFound && re.Msg != "" {
		return re.Msg // the wrapped store error only repeats it
	}
	var lines []string
	for l := range strings.Lines(err.Error()) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, strings.TrimSuffix(l, ":"))
		}
	}
	return strings.Join(lines, "; ")
}

func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentrt",
		Short:         "agentrt runs LLM agents over durable sessions",
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			g.started = true
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.config, "config", "", "config file (default ./agentrt.yaml if present, else built-in defaults)")
	root.PersistentFlags().StringVar(&g.store, "store", "", "store DSN, overriding the config (sqlite:PATH, postgres://USER:PASS@HOST/DB or memory:)")
	root.PersistentFlags().StringVar(&g.tenant, "tenant", "", "the tenant whose sessions to use (default: the config's tenant, else default)")
	root.AddCommand(
		newRunCmd(g), newResumeCmd(g), newCancelCmd(g), newApproveCmd(g), newRespondCmd(g), newRecoverCmd(g), newRulesCmd(g), newMemoryCmd(g), newMCPCmd(g), newChannelsCmd(g), newSessionsCmd(g), newReplayCmd(g),
		newToolsCmd(g), newConfigCmd(g), newVersionCmd(g), newSendCmd(g), newGatewayCmd(g), newInboxCmd(g), newServeCmd(g), newKeysCmd(g), newWorkerCmd(g),
	)
	g.addCompletions(root)
	return root
}

// Version returns the module version agentrt was built from.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		if v == "" || v == "(devel)" {
			v = "devel"
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		return v
	}
	return "devel"
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(g.s.Out, "agentrt %s\n", Version())
			return nil
		},
	}
}

// groupRunE makes a command group print its help when called alone, and
// (with cobra.NoArgs) reject an unknown subcommand as bad usage instead of
// printing the help with exit 0.
func groupRunE(cmd *cobra.Command, _ []string) error { return cmd.Help() }
