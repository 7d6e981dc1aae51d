package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

type runFlags struct {
	agent, session, approve, plan string
	json                          bool
}

func newRunCmd(g *globals) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [--agent A] [--session ID] [--json] [--approve ask|auto|deny] [--plan plan.json] TEXT|-",
		Short: "run one turn and print its events (with --plan, execute that plan: strategy plan_execute)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch f.approve {
			case "ask", "auto", "deny":
			default:
				return usageErr("--approve must be ask, auto or deny, not %q", f.approve)
			}
			text := strings.Join(args, " ")
			if text == "-" {
				// The input from stdin: it may be far longer than a command
				// line can hold.
				b, err := io.ReadAll(g.s.In)
				if err != nil {
					return fmt.Errorf("reading the input from stdin: %w", err)
				}
				text = string(b)
			}
			if strings.TrimSpace(text) == "" {
				return usageErr("the input text is empty")
			}
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
				id, err := ensureSession(ctx, a, f.agent, f.session)
				if err != nil {
					return err
				}
				p := newPrinter(g.s, f.json, a.Notices)
				p.decideBy(f.approve)
				// With --agent, a session of another agent is an error, not
				// a silent run of that other agent.
				res := p.print(a.Runner.Run(ctx, id, agentrt.Input{Text: text, Source: "cli", Agent: f.agent, Plan: plan}))
				return finishRun(ctx, g, a, p, f.approve, id, res)
			})
		},
	}
	cmd.Flags().StringVar(&f.agent, "agent", "", "agent to run (default: assistant, or the only agent)")
	cmd.Flags().StringVar(&f.session, "session", "", "session id to continue or create (default: a new session)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON event per line")
	cmd.Flags().StringVar(&f.approve, "approve", "ask", "tool calls that need approval: ask, auto or deny")
	cmd.Flags().StringVar(&f.plan, "plan", "", "a JSON file holding the plan to execute (the agent's strategy must be plan_execute)")
	return cmd
}

func ensureSession(ctx context.Context, a *app.App, agentName, id string) (string, error) {
	if id != "" {
		if _, err := a.Store.GetSession(ctx, id); err == nil {
			return id, nil
		}
	}
	if agentName == "" {
		names := a.Runner.AgentNames()
		switch {
		case contains(names, "assistant"):
			agentName = "assistant"
		case len(names) == 1:
			agentName = names[0]
		default:
			return "", usageErr("choose an agent with --agent (configured: %s)", strings.Join(names, ", "))
		}
	}
	s, err := a.Runner.CreateSession(ctx, agentName, id, nil)
	if err != nil {
		return "", err
	}
	return s.ID, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// finishRun handles a run's outcome: approvals per mode, then the exit code.
func finishRun(ctx context.Context, g *globals, a *app.App, p *printer, mode, id string, res runResult) error {
	for res.err == nil && res.status == session.StatusWaiting {
		st, err := a.Runner.Load(ctx, id)
		if err != nil {
			return err
		}
		decision := ""
		switch {
		case mode == "auto":
			decision = session.DecisionApprove
		case mode == "deny":
			decision = session.DecisionReject
		case isTerminal(g.s.Err) && isInputTerminal(g.s.In):
			decision = "ask"
		}
		if decision == "" || !onlyApprovals(st) {
			break
		}
		for _, q := range st.Requests {
			d := decision
			var args []byte
			if d == "ask" {
				d, args = prompt(g.s, st, q)
			}
			ev, err := a.Runner.Resolve(ctx, id, q.ID, agentrt.Resolution{Decision: d, Arguments: args, By: decider("")})
			if err != nil {
				return err
			}
			if err := p.emit(ev); err != nil {
				return err
			}
		}
		res = p.print(a.Runner.Resume(ctx, id))
	}
	return outcome(ctx, g, id, res, a)
}

// onlyApprovals reports whether every pending request of st asks for an
// approval, which --approve can answer; a hook's question is for a person.
func onlyApprovals(st *agentrt.State) bool {
	for _, q := range st.Requests {
		if q.Kind != session.RequestApproval || q.Hook {
			return false
		}
	}
	return true
}

func isInputTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func prompt(s Streams, st *agentrt.State, q agentrt.HumanRequest) (string, []byte) {
	in := bufio.NewReader(s.In)
	for _, c := range st.Calls {
		if c.Call.ID == q.CallID {
			fmt.Fprintf(s.Err, "approve %s %s? [y]es / [n]o / [e]dit arguments: ", c.Call.Name, c.Call.Arguments)
		}
	}
	line, _ := in.ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return session.DecisionApprove, nil
	case "e", "edit":
		fmt.Fprint(s.Err, "new arguments (JSON): ")
		args, _ := in.ReadString('\n')
		return session.DecisionEdit, []byte(strings.TrimSpace(args))
	}
	return session.DecisionReject, nil
}

// howToResolve is the command that resolves q, for people.
func howToResolve(id string, q agentrt.HumanRequest) string {
	switch q.Kind {
	case session.RequestApproval:
		return fmt.Sprintf("agentrt approve %s %s    (or --reject)", id, q.ID)
	case session.RequestConfirm:
		return fmt.Sprintf("agentrt respond %s %s --done [--result JSON] | --failed [--reason R] | --retry", id, q.ID)
	case session.RequestSelect:
		return fmt.Sprintf("agentrt respond %s %s --select %s", id, q.ID, strings.Join(q.Options, ","))
	}
	return fmt.Sprintf("agentrt respond %s %s TEXT", id, q.ID)
}

func outcome(ctx context.Context, g *globals, id string, res runResult, a *app.App) error {
	if res.err != nil {
		return res.err
	}
	switch res.status {
	case session.StatusDone:
		if _, inMemory := a.Store.(*memstore.Store); !res.json && !inMemory {
			// (A session in memory is gone when this process ends.)
			fmt.Fprintf(g.s.Err, "session %s (continue with: agentrt run --session %s TEXT)\n", id, id)
		}
		return nil
	case session.StatusWaiting:
		st, err := a.Runner.Load(context.WithoutCancel(ctx), id)
		if err != nil {
			return err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "session %s is waiting for a person; resolve with:", id)
		for _, q := range st.Requests {
			if q.Kind != session.RequestApproval {
				fmt.Fprintf(&b, "\n  %s: %s", q.ID, q.Question)
			}
			fmt.Fprintf(&b, "\n  %s", howToResolve(id, q))
		}
		return &exitError{code: ExitWaiting, msg: b.String()}
	case session.StatusPaused:
		why := "at its round limit"
		if res.reason != "" && res.reason != "max_rounds" {
			why = "at limits." + res.reason // the error line above says what was used
		}
		return &exitError{code: ExitPaused, msg: fmt.Sprintf("session %s paused %s; continue with: agentrt resume %s", id, why, id)}
	case session.StatusCanceled:
		return &exitError{code: ExitFailed, msg: fmt.Sprintf("session %s: run canceled; continue with: agentrt resume %s", id, id)}
	}
	msg := fmt.Sprintf("session %s: run %s", id, res.status)
	if res.errEvent != nil {
		msg += ": " + res.errEvent.Message
	}
	if _, inMemory := a.Store.(*memstore.Store); !inMemory {
		msg += fmt.Sprintf("; once the cause is fixed, continue with: agentrt resume %s", id)
	}
	return &exitError{code: ExitFailed, msg: msg}
}

type runResult struct {
	status   session.Status
	errEvent *session.Error
	err      error
	json     bool
	reason   string // run_finished's
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
}

func newPrinter(s Streams, asJSON bool, notices []string) *printer {
	p := &printer{s: s, json: asJSON, enc: json.NewEncoder(s.Out), notices: notices}
	if !asJSON && isTerminal(s.Err) {
		p.spin = &spinner{w: s.Err}
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

// emit shows one event: as JSON, or as a line for people.
func (p *printer) emit(e *session.Event) error {
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
		fmt.Fprintf(out, "[run] resumed (%s)\n", d.Reason)
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

// spinner shows that agentrt is waiting on the model. Only on a terminal.
type spinner struct {
	w    io.Writer
	mu   sync.Mutex
	done chan struct{}
	wg   sync.WaitGroup
}

func (s *spinner) start() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return
	}
	s.done = make(chan struct{})
	s.wg.Add(1)
	go func(done chan struct{}) {
		defer s.wg.Done()
		frames := `|/-\`
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				fmt.Fprint(s.w, "\r \r")
				return
			case <-t.C:
				fmt.Fprintf(s.w, "\r%c thinking", frames[i%len(frames)])
			}
		}
	}(s.done)
}

func (s *spinner) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	done := s.done
	s.done = nil
	s.mu.Unlock()
	if done != nil {
		close(done)
		s.wg.Wait()
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
