// Package cli implements the agentrt command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/runtime"
)

// Exit codes (PRODUCT §2).
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitUsage   = 2
	ExitWaiting = 3
	ExitPaused  = 4
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
	s      Streams
	opts   app.Options
}

func (g *globals) options() app.Options {
	o := g.opts
	o.ConfigPath = g.config
	o.StoreDSN = g.store
	return o
}

// open builds the app; notices (such as the demo model's) are printed
// only by the commands that run a model.
func (g *globals) open(ctx context.Context) (*app.App, error) {
	return app.Open(ctx, g.options())
}

func (g *globals) openForRun(ctx context.Context) (*app.App, error) {
	a, err := g.open(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range a.Notices {
		fmt.Fprintln(g.s.Err, n)
	}
	return a, nil
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
	err := root.ExecuteContext(ctx)
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
	fmt.Fprintln(s.Err, "agentrt: "+oneLine(err))
	var ce *config.Error
	var re *runtime.Error
	switch {
	case errors.As(err, &ce):
		return ExitUsage
	case errors.As(err, &re) && (re.Kind == runtime.KindInput || re.Kind == runtime.KindState):
		return ExitUsage
	case isCobraUsage(err):
		return ExitUsage
	}
	return ExitFailed
}

func oneLine(err error) string {
	var ce *config.Error
	if errors.As(err, &ce) {
		return err.Error() // one problem per line, each self-contained
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
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
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.config, "config", "", "config file (default ./agentrt.yaml if present, else built-in defaults)")
	root.PersistentFlags().StringVar(&g.store, "store", "", "store DSN, overriding the config (sqlite:PATH or memory:)")
	root.AddCommand(
		newRunCmd(g), newResumeCmd(g), newApproveCmd(g), newSessionsCmd(g), newReplayCmd(g),
		newToolsCmd(g), newConfigCmd(g), newVersionCmd(g),
	)
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

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
