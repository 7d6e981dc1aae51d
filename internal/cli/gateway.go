package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// The gateway's commands: send stores an input and returns, gateway
// answers every source's inputs until Ctrl-C, inbox list shows what is
// pending.

func newSendCmd(g *globals) *cobra.Command {
	var f struct {
		source, session, agent, key string
		json                        bool
	}
	cmd := &cobra.Command{
		Use:   "send --source S [--session ID] [--agent A] [--key K] [--json] TEXT|-",
		Short: "store an input for a source and return at once (agentrt gateway answers it)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("source") {
				return usageErr("--source is required: where the input comes from (a channel, a user)")
			}
			text := strings.Join(args, " ")
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				gw, err := a.NeedGateway()
				if err != nil {
					return err
				}
				if f.agent != "" {
					if _, ok := a.Runner.Agent(f.agent); !ok {
						return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnknownAgent,
							Msg: fmt.Sprintf("no agent %q (configured: %s)", f.agent, strings.Join(a.Runner.AgentNames(), ", "))}
					}
				}
				if f.agent == "" && strings.TrimSpace(f.source) != "" {
					// An input whose session does not exist yet creates it,
					// for the default agent: without one, the gateway would
					// refuse the input later, where its sender does not look.
					sess := cmpOr(f.session, a.Config.SessionFor(f.source))
					if _, err := a.Store.GetSession(ctx, sess); errors.Is(err, session.ErrNotFound) {
						if _, err := defaultAgent(a); err != nil {
							return err
						}
					}
				}
				if text, err = readStdinInput(g.s, text, a.Config.InputLimit()); err != nil {
					return err
				}
				sub, err := gw.Submit(ctx, gateway.Input{Source: f.source, Session: f.session, Agent: f.agent, Text: text, Key: f.key})
				if err != nil {
					return err
				}
				if f.json {
					return json.NewEncoder(g.s.Out).Encode(sub)
				}
				fmt.Fprintln(g.s.Out, sub.ID)
				if sub.Duplicate {
					fmt.Fprintf(g.s.Err, "agentrt: key %q of source %s was sent before: %s is that input, stored once\n", f.key, sub.Source, sub.ID)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&f.source, "source", "", "where the input comes from (a channel, a user); its inputs are answered in order (required)")
	cmd.Flags().StringVar(&f.session, "session", "", "the session the input goes to (default: the source's, gateway.sources in agentrt.yaml, else the source's name)")
	cmd.Flags().StringVar(&f.agent, "agent", "", "the agent of a session the input creates (default: the default agent)")
	cmd.Flags().StringVar(&f.key, "key", "", "an idempotency key: the same key from the same source is stored once")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the stored input as JSON (id, source, session, seq, duplicate)")
	return cmd
}

// readStdinInput returns text, or with "-" what stdin holds, read through
// limit. Unlike readInput it leaves the checks of the text (empty, too
// large) to the gateway, whose codes the caller gets.
func readStdinInput(s Streams, text string, limit int64) (string, error) {
	if text != "-" {
		return text, nil
	}
	b, err := readStdin(s, limit)
	if err != nil {
		return "", err
	}
	if int64(len(b)) > limit {
		return "", &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeInputTooLarge,
			Msg: fmt.Sprintf("the input on stdin is larger than %d bytes, the most agentrt takes (max_input_bytes in agentrt.yaml)", limit)}
	}
	return string(b), nil
}

func newGatewayCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gateway",
		Short: "answer the inputs of every source (agentrt send) until Ctrl-C: coalescing, debounce, interrupt, queue or reject",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := &turnLog{w: g.s.Err}
			g.opts.GatewayModules = append(g.opts.GatewayModules, log)
			g.opts.GatewayOnError = log.failed
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				if _, err := a.NeedGateway(); err != nil {
					return err
				}
				for _, n := range a.Notices {
					fmt.Fprintln(g.s.Err, n)
				}
				fmt.Fprintf(g.s.Err, "agentrt gateway: answering the inputs stored in %s (Ctrl-C stops)\n", postgres.Redact(a.StoreDSN))
				if err := a.RunGateway(ctx); err != nil {
					return err
				}
				fmt.Fprintln(g.s.Err, "agentrt gateway: stopped")
				return nil
			})
		},
	}
}

// turnLog says one line per turn the gateway runs, as a module after the
// agent's, and one per failure (gateway.Config.OnError).
type turnLog struct {
	mu sync.Mutex // one line at a time: sources are served at once
	w  io.Writer
}

func (*turnLog) Name() string { return "cli-turn-log" }
func (*turnLog) Order() int   { return gateway.AgentOrder + 10 }

func (l *turnLog) Run(_ context.Context, t *gateway.Turn) error {
	ids := make([]string, len(t.Inputs))
	for i, in := range t.Inputs {
		ids[i] = in.ID
	}
	what, answer := "no agent run", ""
	if res, ok := t.Result(); ok && res != nil {
		what = "run " + res.RunID + ": " + string(res.Status)
		if res.Reason != "" {
			what += " (" + res.Reason + ")"
		}
		if res.Text != "" {
			// The person who runs the gateway sees what the agent said,
			// not only that it said something; the log has it whole.
			answer = "\n  answer: " + oneLineText(res.Text, answerWidth)
		}
	}
	if q := t.Queued(); len(q) > 0 {
		// Why the turn did not restart for them, and where they went.
		what += fmt.Sprintf("; restarted %d time(s), the most it may (max_restarts): %s queued for the next turn", t.Restart, strings.Join(q, ", "))
	}
	l.say("[gateway] tenant %s, source %s, session %s: %d input(s) (%s), %s%s", t.Tenant, t.Source, t.Session, len(ids), strings.Join(ids, ", "), what, answer)
	return nil
}

// answerWidth is how much of a turn's answer the gateway's log shows.
const answerWidth = 200

func (l *turnLog) failed(source string, err error) {
	what := "failed: " + oneLine(err)
	if re := (*agentrt.Error)(nil); errors.As(err, &re) && re.Code != "" {
		what = fmt.Sprintf("failed (%s): %s", re.Code, oneLine(err))
	}
	if source == "" {
		l.say("[gateway] %s", what)
		return
	}
	l.say("[gateway] source %s: %s", source, what)
}

func (l *turnLog) say(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

func newInboxCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "inbox", Short: "the gateway's inbox: what is pending per source", Args: cobra.NoArgs, RunE: groupRunE}
	var f struct {
		source string
		after  int64
		limit  int
		json   bool
	}
	list := &cobra.Command{
		Use:   "list [--source S [--after SEQ] [--limit N]] [--json]",
		Short: "the sources with pending inputs (their session, count, version, ages); with --source, that source's inputs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("source") {
				// They page one source's inputs: silently listing every
				// source instead would hide the mistake.
				for _, name := range []string{"after", "limit"} {
					if cmd.Flags().Changed(name) {
						return usageErr("--%s needs --source: it pages one source's inputs", name)
					}
				}
			}
			return g.withAppReading(cmd, func(ctx context.Context, a *app.App) error {
				gw, err := a.NeedGateway()
				if err != nil {
					return err
				}
				now := time.Now()
				if g.opts.Now != nil {
					now = g.opts.Now()
				}
				if cmd.Flags().Changed("source") {
					return g.listInputs(ctx, a, f.source, f.after, f.limit, f.json, now)
				}
				return g.listSources(ctx, gw, f.json, now)
			})
		},
	}
	list.Flags().StringVar(&f.source, "source", "", "list this source's inputs, in every state")
	list.Flags().Int64Var(&f.after, "after", 0, "with --source: the inputs after this seq")
	list.Flags().IntVar(&f.limit, "limit", 0, "with --source: at most this many inputs (default: all)")
	list.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.AddCommand(list)
	return cmd
}

// listSources prints the sources of ctx's tenant with pending inputs.
func (g *globals) listSources(ctx context.Context, gw *gateway.Gateway, asJSON bool, now time.Time) error {
	all, err := gw.Pending(ctx)
	if err != nil {
		return err
	}
	tenant := session.TenantOf(ctx)
	sources := []session.SourceState{}
	for _, st := range all {
		if st.Tenant == tenant {
			sources = append(sources, st)
		}
	}
	if asJSON {
		enc := json.NewEncoder(g.s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(sources)
	}
	if len(sources) == 0 {
		fmt.Fprintln(g.s.Err, "agentrt: no input is pending")
		return nil
	}
	tw := tabwriter.NewWriter(g.s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tSESSION\tPENDING\tVERSION\tFIRST\tLAST")
	for _, st := range sources {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s ago\t%s ago\n", st.Source, st.SessionID, st.Pending, st.Version, age(now, st.First), age(now, st.Last))
	}
	return tw.Flush()
}

// listInputs prints source's inputs after seq after, at most limit.
func (g *globals) listInputs(ctx context.Context, a *app.App, source string, after int64, limit int, asJSON bool, now time.Time) error {
	inbox := a.Store.(session.Inbox) // the app has a gateway: its store keeps an inbox
	ins, err := inbox.Inputs(ctx, source, after, limit)
	if err != nil {
		return err
	}
	if ins == nil {
		ins = []session.InboxInput{}
	}
	if asJSON {
		enc := json.NewEncoder(g.s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(ins)
	}
	if len(ins) == 0 {
		fmt.Fprintf(g.s.Err, "agentrt: source %s has no inputs after seq %d\n", source, after)
		return nil
	}
	tw := tabwriter.NewWriter(g.s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSEQ\tAGE\tSESSION\tTEXT\tRUN OR REASON")
	for _, in := range ins {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", in.ID, in.State, in.Seq, age(now, in.At), in.SessionID,
			oneLineText(inputText(in), 60), oneLineText(cmpOr(in.RunID, in.Reason), 80))
	}
	return tw.Flush()
}

// inputText is an input's content as text: its text parts, and its data
// parts as JSON.
func inputText(in session.InboxInput) string {
	var parts []string
	for _, p := range in.Parts {
		if p.Type == "data" {
			parts = append(parts, string(p.Data))
			continue
		}
		parts = append(parts, p.Text)
	}
	return strings.Join(parts, " ")
}

// oneLineText is s on one line, clipped to n bytes.
func oneLineText(s string, n int) string {
	return clip(strings.Join(strings.Fields(s), " "), n)
}

// age is how long before now t was, to the second.
func age(now, t time.Time) string {
	return max(now.Sub(t), 0).Round(time.Second).String()
}
