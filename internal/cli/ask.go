package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
)

// isTerminal reports whether v (a stream) is a terminal. A character
// device is not enough: /dev/null is one, and reading "no" from it
// rejected calls nobody was asked about.
func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// interactive reports whether a person can be asked: stdin and stderr
// are terminals.
func (s Streams) interactive() bool { return isTerminal(s.In) && isTerminal(s.Err) }

// lineReader reads a person's answers, a line at a time. A read from a
// terminal blocks until Enter and cannot be interrupted, so the reads run
// on a goroutine of their own and next waits for a line or for ctx: Ctrl-C
// stops a question at once. The goroutine ends at the end of the input or
// when stop is closed; one still blocked in a read of the terminal ends
// with the process.
type lineReader struct {
	in    io.Reader
	once  sync.Once
	lines chan line
	stop  chan struct{}
}

type line struct {
	text string
	err  error
}

func newLineReader(in io.Reader) *lineReader {
	return &lineReader{in: in, lines: make(chan line), stop: make(chan struct{})}
}

// next returns the next line without its line ending; io.EOF at the end
// of the input (Ctrl-D on a terminal), ctx's error when ctx ends first.
func (l *lineReader) next(ctx context.Context) (string, error) {
	l.once.Do(func() { go l.read() })
	select {
	case <-ctx.Done():
		return "", context.Cause(ctx)
	case ln, ok := <-l.lines:
		if !ok {
			return "", io.EOF
		}
		return ln.text, ln.err
	}
}

func (l *lineReader) read() {
	defer close(l.lines)
	r := bufio.NewReader(l.in)
	for {
		text, err := r.ReadString('\n')
		if text != "" {
			select {
			case l.lines <- line{text: strings.TrimRight(text, "\r\n")}:
			case <-l.stop:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				select {
				case l.lines <- line{err: err}:
				case <-l.stop:
				}
			}
			return
		}
	}
}

// close ends the reading goroutine, unless it is blocked in a read.
func (l *lineReader) close() { close(l.stop) }

// errLater is an answer put off: the request stays pending.
var errLater = errors.New("answered later")

// answer answers the pending requests of st as mode says: --approve auto
// or deny decides the approvals of tool calls, and a person at a terminal
// answers the rest (with mode ask, all of them). Unless every request has
// an answerer, none is answered: the run could not go on anyway. It
// reports whether every request was answered, and so the run can resume;
// an error is the store's, or ctx's when the person pressed Ctrl-C.
func (g *globals) answer(ctx context.Context, a *app.App, p *printer, mode, id string, st *agentrt.State) (*agentrt.Run, bool, error) {
	interactive := g.s.interactive()
	how := make([]string, len(st.Requests))
	for i, q := range st.Requests {
		switch {
		case (mode == "auto" || mode == "deny") && q.Kind == session.RequestApproval && !q.Hook:
			how[i] = mode
		case interactive && q.Kind != session.RequestConfirm:
			how[i] = "ask"
		default:
			return nil, false, nil // for a person, elsewhere: the outcome says how
		}
	}
	all := true
	var run *agentrt.Run
	for i, q := range st.Requests {
		var err error
		var h *agentrt.Run
		switch how[i] {
		case "auto":
			h, err = g.resolveOne(ctx, a, p, id, q, agentrt.Resolution{Decision: session.DecisionApprove, By: decider("")})
		case "deny":
			h, err = g.resolveOne(ctx, a, p, id, q, agentrt.Resolution{Decision: session.DecisionReject, By: decider("")})
		default:
			h, err = g.ask(ctx, a, p, id, st, q)
		}
		if h != nil {
			run = h
		}
		switch {
		case errors.Is(err, errLater):
			all = false // and ask the next
		case errors.Is(err, io.EOF):
			fmt.Fprintln(g.s.Err)
			return run, false, nil // the person is done answering
		case err != nil:
			return run, false, err
		}
	}
	return run, all, nil
}

// resolveOne records res on q and shows what it committed; when it was the
// last answer the session waited for, the run goes on at once (the run is
// returned), here, and nowhere else.
func (g *globals) resolveOne(ctx context.Context, a *app.App, p *printer, id string, q agentrt.HumanRequest, res agentrt.Resolution) (*agentrt.Run, error) {
	out, err := a.Runner.ResolveAndContinue(ctx, id, q.ID, res)
	if err != nil {
		return nil, err
	}
	return out.Run, g.showResolved(ctx, a, p, id, out.Event, true)
}

// showResolved shows what resolving a request committed: with --json
// every event (the input_resolved ev, and the tool_result that gives an
// answer or a confirmed outcome to its call), for people the decision when
// show is set, and the standing decision it made, if any. The printer notes
// the request's kind either way, to say what a resume resumed from.
func (g *globals) showResolved(ctx context.Context, a *app.App, p *printer, id string, ev *session.Event, show bool) error {
	if p.json {
		if err := p.emit(ev); err != nil {
			return err
		}
		for e, err := range a.Store.Events(ctx, id, ev.Seq) {
			if err != nil {
				return err
			}
			if _, ok := e.Data.(*session.ToolResult); ok && e.Seq == ev.Seq+1 {
				if err := p.emit(e); err != nil {
					return err
				}
			}
			break // a resolution commits at most one event after its input_resolved
		}
	} else if show {
		p.emit(ev)
	} else {
		p.note(ev)
	}
	if d, ok := ev.Data.(*session.InputResolved); ok && d.Rule != nil {
		where := "in session " + id
		revoke := agentrt.NextStep{Kind: agentrt.NextRevoke, SessionID: id, RuleID: d.Rule.ID}
		if d.Rule.Scope == session.RuleAgent {
			where = "for agent " + d.Rule.Agent
			revoke.Agent = d.Rule.Agent
		}
		fmt.Fprintf(g.s.Err, "standing decision %s: %s later calls of %s %s; to end it: %s\n",
			d.Rule.ID, d.Rule.Decision, d.Rule.Tool, where, g.command(revoke))
	}
	return nil
}

// ask asks the person at the terminal to answer q, and records the
// answer. It returns errLater when the person puts it off, io.EOF at the
// end of the input, ctx's error on Ctrl-C. An answer the runner refuses
// (arguments the tool's schema does not take, an option that does not
// exist) is said, and asked again.
func (g *globals) ask(ctx context.Context, a *app.App, p *printer, id string, st *agentrt.State, q agentrt.HumanRequest) (*agentrt.Run, error) {
	if g.lines == nil {
		g.lines = newLineReader(g.s.In)
	}
	w := g.s.Err
	editing := false // the last answer was arguments the tool refused: ask for them again
	for {
		var res agentrt.Resolution
		var err error
		switch {
		case editing:
			editing = false
			var args json.RawMessage
			if args, err = g.askArguments(ctx); err == nil && args == nil {
				continue // back to the question
			}
			res = agentrt.Resolution{Decision: session.DecisionEdit, Arguments: args}
		case q.Kind == session.RequestApproval:
			res, err = g.askApproval(ctx, st, q)
		case q.Kind == session.RequestSelect:
			res, err = g.askSelect(ctx, q)
		default:
			res, err = g.askText(ctx, q)
		}
		if err != nil {
			return nil, err
		}
		res.By = decider("")
		run, err := g.resolveOne(ctx, a, p, id, q, res)
		if re := (*agentrt.Error)(nil); errors.As(err, &re) && retryable[re.ErrorCode()] {
			fmt.Fprintf(w, "%s; try again\n", oneLine(err))
			editing = res.Decision == session.DecisionEdit
			continue
		}
		return run, err
	}
}

// retryable are the codes of answers the runner refuses as such: the
// person is asked again.
var retryable = map[string]bool{
	agentrt.CodeBadArguments: true, agentrt.CodeBadRule: true, agentrt.CodeBadAnswer: true,
	agentrt.CodeEmptyAnswer: true, agentrt.CodeBadDecision: true,
}

// askApproval asks whether the call of q may run.
func (g *globals) askApproval(ctx context.Context, st *agentrt.State, q agentrt.HumanRequest) (agentrt.Resolution, error) {
	w := g.s.Err
	question := q.Question
	for _, c := range st.Calls {
		if c.Call.ID == q.CallID && !q.Hook {
			question = fmt.Sprintf("approve %s %s?", c.Call.Name, clip(string(c.Call.Arguments), 400))
		}
	}
	oneCall := q.CallID != "" && len(q.Calls) <= 1
	choices := "[y]es / [n]o"
	if oneCall {
		choices += " / [e]dit"
		if !q.Hook {
			choices += " / [a]lways"
		}
	}
	choices += " / [l]ater"
	for {
		fmt.Fprintf(w, "%s %s: ", question, choices)
		answer, err := g.lines.next(ctx)
		if err != nil {
			return agentrt.Resolution{}, err
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			return agentrt.Resolution{Decision: session.DecisionApprove}, nil
		case "n", "no":
			return agentrt.Resolution{Decision: session.DecisionReject}, nil
		case "l", "later":
			return agentrt.Resolution{}, errLater
		case "a", "always":
			if oneCall && !q.Hook {
				// As agentrt approve --always: this session's later calls
				// of the tool.
				return agentrt.Resolution{Decision: session.DecisionApprove, Always: &agentrt.Always{}}, nil
			}
		case "e", "edit":
			if !oneCall {
				break
			}
			args, err := g.askArguments(ctx)
			if err != nil {
				return agentrt.Resolution{}, err
			}
			if args == nil {
				continue // back to the question
			}
			return agentrt.Resolution{Decision: session.DecisionEdit, Arguments: args}, nil
		}
		fmt.Fprintf(w, "answer %s\n", orList(strings.Split(strings.NewReplacer("[", "", "]", "").Replace(choices), " / ")))
	}
}

// askArguments asks for a call's new arguments until they are JSON, and
// asks again after text that is not; nil when the person gives none, to
// go back to the question.
func (g *globals) askArguments(ctx context.Context) (json.RawMessage, error) {
	for {
		fmt.Fprint(g.s.Err, "new arguments (JSON; empty to go back): ")
		args, err := g.lines.next(ctx)
		if err != nil {
			return nil, err
		}
		if args = strings.TrimSpace(args); args == "" {
			return nil, nil
		}
		var v any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			fmt.Fprintf(g.s.Err, "not JSON: %v; try again\n", err)
			continue
		}
		return json.RawMessage(args), nil
	}
}

// askText asks a question whose answer is a line of text.
func (g *globals) askText(ctx context.Context, q agentrt.HumanRequest) (agentrt.Resolution, error) {
	for {
		fmt.Fprintf(g.s.Err, "%s (your answer; Ctrl-D for later): ", q.Question)
		answer, err := g.lines.next(ctx)
		if err != nil {
			return agentrt.Resolution{}, err
		}
		if strings.TrimSpace(answer) != "" {
			return agentrt.Resolution{Decision: session.DecisionAnswer, Text: answer}, nil
		}
	}
}

// askSelect asks for a choice among q's options, by number or by name.
func (g *globals) askSelect(ctx context.Context, q agentrt.HumanRequest) (agentrt.Resolution, error) {
	w := g.s.Err
	how := "choose one, by number or name"
	if q.Multi {
		how = "choose one or more, by number or name, separated by commas"
	}
	for {
		fmt.Fprintln(w, q.Question)
		for i, o := range q.Options {
			fmt.Fprintf(w, "  %d) %s\n", i+1, o)
		}
		fmt.Fprintf(w, "%s (Ctrl-D for later): ", how)
		answer, err := g.lines.next(ctx)
		if err != nil {
			return agentrt.Resolution{}, err
		}
		if strings.TrimSpace(answer) == "" {
			continue
		}
		parts := []string{answer}
		if q.Multi {
			parts = strings.Split(answer, ",")
		}
		var chosen []string
		for _, s := range parts {
			s = strings.TrimSpace(s)
			if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(q.Options) {
				s = q.Options[n-1]
			}
			if s != "" {
				chosen = append(chosen, s)
			}
		}
		// The runner checks the names, and says which is no option.
		return agentrt.Resolution{Decision: session.DecisionAnswer, Selected: chosen}, nil
	}
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
