package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

type runFlags struct {
	agent, session, approve, plan, source string
	json                                  bool
}

func newRunCmd(g *globals) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [--agent A] [--session ID] [--source S] [--json] [--approve ask|auto|deny] [--plan plan.json] TEXT|-",
		Short: "run one turn and print its events (with --plan, execute that plan: strategy plan_execute)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch f.approve {
			case "ask", "auto", "deny":
			default:
				return usageErr("--approve must be ask, auto or deny, not %q", f.approve)
			}
			text := strings.Join(args, " ")
			var plan *agentrt.Plan
			if f.plan != "" {
				b, err := os.ReadFile(f.plan)
				if err != nil {
					return usageErr("--plan: %v", err)
				}
				if plan, err = agentrt.DecodePlan(b); err != nil {
					return usageErr("--plan %s: not a plan: %v (want {\"goal\": …, \"steps\": [{\"kind\": \"tool\", \"tool\": …, \"arguments\": {…}}, …]}; \"type\" and \"name\" may stand for \"kind\" and \"tool\")", f.plan, err)
				}
			}
			return g.withApp(cmd, func(ctx context.Context, a *app.App) error {
				text, err := readInput(g.s, text, a.Config.InputLimit())
				if err != nil {
					return err
				}
				id, err := ensureSession(ctx, a, f.agent, f.session)
				if err != nil {
					return err
				}
				p := newPrinter(g.s, f.json, noticesFor(ctx, a, id))
				p.decideBy(f.approve)
				// With --agent, a session of another agent is an error, not
				// a silent run of that other agent.
				var events iter.Seq2[*session.Event, error]
				if a.Gateway != nil && plan == nil {
					// One way in: the input is stored in the source's
					// inbox, and the gateway's turn answers it here.
					events = throughGateway(ctx, a, a.Gateway, f.source, f.agent, id, text)
				} else {
					// A caller's plan is not an input of the inbox; a store
					// without an inbox has no gateway.
					events = a.Runner.Run(ctx, id, agentrt.Input{Text: text, Source: f.source, Agent: f.agent, Plan: plan})
				}
				res := p.print(events)
				if isWaiting(res.err) {
					// The input was not taken: the session waits for a
					// person first.
					return g.outcome(ctx, a, id, runResult{status: session.StatusWaiting, notRun: true})
				}
				return finishRun(ctx, g, a, p, f.approve, id, res)
			})
		},
	}
	cmd.Flags().StringVar(&f.agent, "agent", "", "agent to run (default: assistant, or the only agent)")
	cmd.Flags().StringVar(&f.session, "session", "", "session id to continue or create (default: a new session)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON event per line")
	cmd.Flags().StringVar(&f.approve, "approve", "ask", "tool calls that need approval: ask, auto or deny")
	cmd.Flags().StringVar(&f.plan, "plan", "", "a JSON file holding the plan to execute (the agent's strategy must be plan_execute)")
	cmd.Flags().StringVar(&f.source, "source", "cli", "the source the input comes from, for the gateway (its settings in agentrt.yaml)")
	return cmd
}

// readInput returns the turn's input: text, or with "-" what stdin holds,
// read through a limit so that an input too large is refused without being
// held in memory.
func readInput(s Streams, text string, limit int64) (string, error) {
	tooLarge := func(what string) error {
		return usageErr("%s is larger than %d bytes, the most agentrt takes (max_input_bytes in agentrt.yaml)", what, limit)
	}
	if text == "-" {
		b, err := readStdin(s, limit)
		if err != nil {
			return "", err
		}
		if int64(len(b)) > limit {
			return "", tooLarge("the input on stdin")
		}
		text = string(b)
	}
	if int64(len(text)) > limit {
		return "", tooLarge("the input")
	}
	if strings.TrimSpace(text) == "" {
		return "", usageErr("the input text is empty")
	}
	return text, nil
}

// stdinHint is what a person at a terminal is told when agentrt reads the
// input "-" names from it; without it agentrt just waits, saying nothing.
const stdinHint = "agentrt: reading the input from the terminal; end it with Ctrl-D on an empty line"

// readStdin reads what stdin holds, at most limit+1 bytes (one more than
// an input may hold, to tell an input too large).
func readStdin(s Streams, limit int64) ([]byte, error) {
	if s.interactive() {
		fmt.Fprintln(s.Err, stdinHint)
	}
	b, err := io.ReadAll(io.LimitReader(s.In, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the input from stdin: %w", err)
	}
	return b, nil
}

// ensureSession returns the session to run: id when it exists, else a new
// one (named id, if given) of agentName, or of the runner's default agent.
func ensureSession(ctx context.Context, a *app.App, agentName, id string) (string, error) {
	if id != "" {
		if _, err := a.Store.GetSession(ctx, id); err == nil {
			return id, nil
		}
	}
	if agentName == "" {
		name, err := defaultAgent(a)
		if err != nil {
			return "", err
		}
		agentName = name
	}
	s, err := a.Runner.CreateSession(ctx, agentName, id, nil)
	if err != nil {
		return "", err
	}
	return s.ID, nil
}

// defaultAgent is the runner's default agent; with several agents and no
// default, a usage error that lists them.
func defaultAgent(a *app.App) (string, error) {
	name, err := a.Runner.DefaultAgent()
	if err != nil {
		return "", usageErr("choose an agent with --agent (configured: %s)", strings.Join(a.Runner.AgentNames(), ", "))
	}
	return name, nil
}

// noticesFor returns the notices that concern a run of session id: those
// of the models its agent, and the agents it delegates to, use (app.App.NoticesFor).
func noticesFor(ctx context.Context, a *app.App, id string) []string {
	s, err := a.Store.GetSession(ctx, id)
	if err != nil {
		return a.Notices // the run says what is wrong
	}
	name := s.Agent
	if name == "" {
		if name, err = a.Runner.DefaultAgent(); err != nil {
			return a.Notices
		}
	}
	return a.NoticesFor(name)
}

// isWaiting reports whether err refuses a run because its session waits
// for a person.
func isWaiting(err error) bool {
	var re *agentrt.Error
	return errors.As(err, &re) && re.Code == agentrt.CodeWaiting
}

// finishRun handles a run's outcome: while it waits, the pending requests
// answered as mode says, on a terminal by the person, and the run resumed;
// then the exit code and the commands that go on.
func finishRun(ctx context.Context, g *globals, a *app.App, p *printer, mode, id string, res runResult) error {
	for res.err == nil && res.status == session.StatusWaiting {
		st, err := a.Runner.Load(ctx, id)
		if err != nil {
			return err
		}
		run, all, err := g.answer(ctx, a, p, mode, id, st)
		if run != nil {
			// The last answer continued the run: follow it to its end.
			res = g.follow(ctx, p, run)
			continue
		}
		if err != nil && ctx.Err() != nil {
			res.stopped = true // Ctrl-C at a question: the requests stay pending
			break
		}
		if err != nil {
			return err
		}
		if !all {
			break
		}
		res = p.print(a.Runner.Resume(ctx, id))
	}
	return g.outcome(ctx, a, id, res)
}

// follow prints the events of run h, which goes on in this process, until
// it ends. When ctx ends (Ctrl-C) the run is canceled with ctx's cause, as
// a run on the command's own goroutine would be.
func (g *globals) follow(ctx context.Context, p *printer, h *agentrt.Run) runResult {
	stop := context.AfterFunc(ctx, func() { h.CancelCause(context.Cause(ctx)) })
	defer stop()
	return p.print(h.Events(context.WithoutCancel(ctx)))
}

// flags are the global flags a follow-up command repeats.
func (g *globals) flags() agentrt.CLIFlags {
	return agentrt.CLIFlags{Config: g.config, Store: g.store, Tenant: g.tenant}
}

// command renders a next step as an agentrt command with the global flags
// this one was given.
func (g *globals) command(n agentrt.NextStep) string { return n.Command(g.flags()) }

// howToResolve is the command that resolves q, for people.
func (g *globals) howToResolve(id string, q agentrt.HumanRequest) string {
	o := agentrt.DescribeOutcome(&agentrt.Result{SessionID: id, Status: session.StatusWaiting}, []agentrt.HumanRequest{q})
	return g.said(o.Next[0])
}

// said is a next step as people read it: the command, and for an approval
// the other way to answer it.
func (g *globals) said(n agentrt.NextStep) string {
	if n.Kind == agentrt.NextResolve {
		return g.command(n) + "    (or --reject)"
	}
	return g.command(n)
}

// outcome says how the run of session id ended (agentrt.DescribeOutcome)
// and returns the error that makes agentrt exit with its code: the summary
// and the commands that go on, which carry the global flags this command
// was given.
func (g *globals) outcome(ctx context.Context, a *app.App, id string, res runResult) error {
	if res.err != nil {
		return res.err
	}
	r := &agentrt.Result{SessionID: id, Status: res.status, Reason: res.reason, Err: res.errEvent}
	var pending []agentrt.HumanRequest
	if res.status == session.StatusWaiting {
		st, err := a.Runner.Load(context.WithoutCancel(ctx), id)
		if err != nil {
			return err
		}
		pending = st.Requests
	}
	o := agentrt.DescribeOutcome(r, pending)
	// A session in memory is gone when this process ends: no command goes
	// on with a turn that is over.
	_, inMemory := a.Store.(*memstore.Store)
	var b strings.Builder
	switch res.status {
	case session.StatusDone:
		if !res.json && !inMemory {
			fmt.Fprintf(g.s.Err, "session %s (continue with: %s)\n", id, g.command(o.Next[0]))
		}
		return nil
	case session.StatusWaiting:
		b.WriteString(o.Summary)
		if res.notRun {
			b.WriteString(", so the input was not run")
		}
		b.WriteString("; resolve with:")
		for _, n := range o.Next {
			if n.RequestKind != session.RequestApproval {
				fmt.Fprintf(&b, "\n  %s: %s", n.RequestID, n.Question)
				if len(n.Options) > 0 {
					fmt.Fprintf(&b, " (options: %s)", strings.Join(n.Options, ", "))
				}
			}
			fmt.Fprintf(&b, "\n  %s", g.said(n))
		}
	case session.StatusFailed:
		b.WriteString(o.Summary)
		if !inMemory {
			fmt.Fprintf(&b, "; once the cause is fixed, continue with: %s", g.command(o.Next[0]))
		}
	default:
		fmt.Fprintf(&b, "%s; continue with: %s", o.Summary, g.command(o.Next[0]))
	}
	code := o.ExitCode
	if res.stopped {
		code = interruptCode(ctx)
	}
	return &exitError{code: code, msg: b.String()}
}

// interruptCode is the exit code of a command stopped by ctx: 130 when
// Ctrl-C stopped it, else ExitFailed.
func interruptCode(ctx context.Context) int {
	if errors.Is(context.Cause(ctx), agentrt.ErrSignalInterrupt) {
		return ExitInterrupted
	}
	return ExitFailed
}

type runResult struct {
	status   session.Status
	errEvent *session.Error
	err      error
	json     bool
	reason   string // run_finished's
	// notRun: a run of new input refused because the session waits;
	// stopped: Ctrl-C ended the questions of a waiting run.
	notRun, stopped bool
}

// printer renders events for a person, or as JSON lines.
type printer struct {
	s        Streams
	json     bool
	enc      *json.Encoder
	midLine  bool // text was written without a trailing newline
	streamed bool // the last model call streamed text
	spin     *spinner
	notices  []string // printed to stderr at the first event, then nil
	// decide is the --approve mode when it answers approvals itself
	// (auto, deny): the requests are then said as decisions, not asked.
	decide  string
	pending map[string][]model.ToolCall // the calls of approvals not said yet, with decide
	blocked map[string]bool             // calls said not to run, whose failed result is not shown again
	// resolved are the kinds of the requests answered since the last
	// resume, which its line names ("resumed (answer)").
	resolved []session.RequestKind
}

func newPrinter(s Streams, asJSON bool, notices []string) *printer {
	p := &printer{s: s, json: asJSON, enc: json.NewEncoder(s.Out), notices: notices}
	if !asJSON && isTerminal(s.Err) {
		tty := terminalErr(s.Err)
		p.s.Err = tty // the printer's lines clear the spinner's frame too
		p.spin = &spinner{w: tty}
	}
	return p
}

func (p *printer) print(seq iter.Seq2[*session.Event, error]) runResult {
	var res runResult
	res.json = p.json
	defer p.spin.stop()
	for e, err := range seq {
		if err != nil {
			res.err = err
			break
		}
		for _, n := range p.notices {
			fmt.Fprintln(p.s.Err, n)
		}
		p.notices = nil
		switch d := e.Data.(type) {
		case *session.RunFinished:
			res.status, res.reason = d.Status, d.Reason
		case *session.Error:
			res.errEvent = d
		}
		if err := p.emit(e); err != nil {
			res.err = err
			break
		}
	}
	p.spin.stop()
	p.endLine()
	return res
}

// decideBy tells the printer that --approve mode answers approvals
// itself when it is auto or deny.
func (p *printer) decideBy(mode string) {
	if mode == "auto" || mode == "deny" {
		p.decide = mode
	}
}

// note takes in an event without showing it: the kind of a request
// answered, for the next resume's line.
func (p *printer) note(e *session.Event) {
	if d, ok := e.Data.(*session.InputResolved); ok && !slices.Contains(p.resolved, d.Kind) {
		p.resolved = append(p.resolved, d.Kind)
	}
}

// resumedFrom says what a resume with reason went on from: for one after
// requests were answered, what answered them.
func (p *printer) resumedFrom(reason string) string {
	defer func() { p.resolved = nil }()
	if reason != agentrt.ResumeApproval || len(p.resolved) == 0 {
		return reason
	}
	words := make([]string, len(p.resolved))
	for i, k := range p.resolved {
		switch k {
		case session.RequestPrompt:
			words[i] = "answer"
		case session.RequestSelect:
			words[i] = "choice"
		case session.RequestConfirm:
			words[i] = "decision"
		default:
			words[i] = "approval"
		}
	}
	return strings.Join(words, ", ")
}

// emit shows one event: as JSON, or as a line for people.
func (p *printer) emit(e *session.Event) error {
	p.note(e)
	if p.json {
		return p.enc.Encode(e)
	}
	p.human(e)
	return nil
}

func (p *printer) endLine() {
	if p.midLine {
		fmt.Fprintln(p.s.Out)
		p.midLine = false
	}
}

func (p *printer) human(e *session.Event) {
	out := p.s.Out
	switch d := e.Data.(type) {
	case *session.ModelStarted:
		if d.Attempt > 1 {
			p.endLine()
			fmt.Fprintf(out, "[model] %s, attempt %d\n", d.Model, d.Attempt)
		}
		p.streamed = false
		p.spin.start()
	case *session.Token:
		if d.Pulse {
			return // still waiting: the spinner says so
		}
		p.spin.stop()
		p.streamed = true
		fmt.Fprint(out, d.Text)
		p.midLine = !strings.HasSuffix(d.Text, "\n")
	case *session.ModelFinished:
		p.spin.stop()
		p.endLine()
	case *session.ToolCall:
		p.endLine()
		if d.Blocked != "" {
			if p.blocked == nil {
				p.blocked = map[string]bool{}
			}
			p.blocked[d.CallID] = true
			fmt.Fprintf(out, "[tool] %s %s not run: %s\n", d.Name, clip(string(d.Arguments), 400), clip(d.Blocked, 400))
			break
		}
		if d.Rule != "" {
			fmt.Fprintf(out, "[tool] %s %s (decided by standing decision %s)\n", d.Name, clip(string(d.Arguments), 400), d.Rule)
			break
		}
		fmt.Fprintf(out, "[tool] %s %s\n", d.Name, clip(string(d.Arguments), 400))
	case *session.ToolResult:
		if p.blocked[d.CallID] {
			delete(p.blocked, d.CallID)
			break
		}
		if d.OK {
			fmt.Fprintf(out, "[tool] %s ok: %s\n", d.Name, clip(string(d.Result), 400))
		} else {
			fmt.Fprintf(out, "[tool] %s failed: %s\n", d.Name, clip(d.Error, 400))
		}
	case *session.InputRequired:
		p.endLine()
		label := "[" + string(d.Kind) + "]"
		if d.Kind == session.RequestApproval && p.decide != "" && !d.Hook {
			// Said when --approve answers it; if it does not (a person
			// must answer another request too), the outcome lists it.
			if p.pending == nil {
				p.pending = map[string][]model.ToolCall{}
			}
			p.pending[d.RequestID] = d.Calls
			break
		}
		if d.Kind == session.RequestSelect {
			fmt.Fprintf(out, "%s %s (options: %s; request %s)\n", label, d.Question, strings.Join(d.Options, ", "), d.RequestID)
			break
		}
		fmt.Fprintf(out, "%s %s (request %s)\n", label, d.Question, d.RequestID)
	case *session.InputResolved:
		if calls, ok := p.pending[d.RequestID]; ok && d.Kind == session.RequestApproval {
			delete(p.pending, d.RequestID)
			verdict := map[string]string{session.DecisionApprove: "approved", session.DecisionReject: "rejected"}[d.Decision]
			for _, c := range calls {
				fmt.Fprintf(out, "[approval] %s %s: %s (--approve %s)\n", c.Name, clip(string(c.Arguments), 400), cmpOr(verdict, d.Decision), p.decide)
			}
			break
		}
		fmt.Fprintf(out, "[%s] %s: %s\n", cmpOr(string(d.Kind), "approval"), d.RequestID, d.Decision)
	case *session.Interrupted:
		p.endLine()
		fmt.Fprintf(out, "[run] interrupted (%s)\n", d.Reason)
	case *session.RunResumed:
		fmt.Fprintf(out, "[run] resumed (%s)\n", p.resumedFrom(d.Reason))
	case *session.PlanCreated:
		var pl agentrt.Plan
		_ = json.Unmarshal(d.Plan, &pl)
		if pl.Goal != "" {
			fmt.Fprintf(out, "[plan] %d step(s) (%s): %s\n", len(pl.Steps), d.Source, clip(pl.Goal, 100))
		} else {
			fmt.Fprintf(out, "[plan] %d step(s) (%s)\n", len(pl.Steps), d.Source)
		}
	case *session.PlanStepFinished:
		o := d.Observation
		what := string(o.Result)
		if !o.OK {
			what = o.Error
		}
		fmt.Fprintf(out, "[plan] step %d %s: %s\n", d.Index+1, d.Status, clip(what, 120))
	case *session.SubagentStarted:
		p.endLine()
		verb := "started"
		if d.Resumed {
			verb = "resumed"
		}
		fmt.Fprintf(out, "[subagent] %s %s in session %s\n", d.Agent, verb, d.ChildSession)
	case *session.SubagentFinished:
		fmt.Fprintf(out, "[subagent] %s answered: %s\n", d.ChildSession, clip(d.Answer, 120))
	case *session.SubagentPaused:
		fmt.Fprintf(out, "[subagent] %s paused (%s)\n", d.ChildSession, d.Reason)
	case *session.SubagentError:
		fmt.Fprintf(p.s.Err, "[subagent] %s failed (%s): %s\n", d.ChildSession, d.Code, d.Message)
	case *session.Compaction:
		p.endLine()
		how := "summarised"
		if d.Truncated {
			how = "truncated (" + d.Error + ")"
		}
		fmt.Fprintf(p.s.Err, "[compaction] the first %d messages %s (%s)\n", d.CompactedCount, how, d.Reason)
	case *session.LoopWarning:
		p.endLine()
		fmt.Fprintf(p.s.Err, "[loop] warning (%s): %s; the model was told to stop repeating\n", d.Detector, d.Detail)
	case *session.Final:
		// Streamed already as tokens; print it when nothing was streamed.
		if !p.streamed {
			fmt.Fprintln(out, d.Text)
		}
	case *session.Error:
		p.spin.stop()
		p.endLine()
		switch {
		case d.Model != "" && d.RetryInMS > 0:
			fmt.Fprintf(p.s.Err, "[model] %s attempt %d failed (%s): %s; retrying in %s\n", d.Model, d.Attempt, d.Code, d.Message,
				time.Duration(d.RetryInMS)*time.Millisecond)
		case d.Model != "":
			fmt.Fprintf(p.s.Err, "[model] %s attempt %d failed (%s): %s\n", d.Model, d.Attempt, d.Code, d.Message)
		default:
			fmt.Fprintf(p.s.Err, "error (%s): %s\n", d.Code, d.Message)
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
