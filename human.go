package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// AskHuman is the built-in ask_human executor: an input_required event
// per request — one per call for an approval or a confirmation, one for a
// prompt or a selection. The policy then sees the pending requests and
// waits (React returns KindWait), so the run stops waiting until a person
// resolves every request (Runner.Resolve) and the run resumes.
func AskHuman(_ context.Context, x *Exec, ins Instruction) error {
	ask := ins.Ask
	if ask == nil {
		ask = &Ask{Kind: session.RequestApproval}
	}
	switch ask.Kind {
	case session.RequestApproval, session.RequestConfirm:
		if len(ins.Calls) == 0 {
			return &Error{Kind: FailPolicy, Code: CodeBadInstruction, Msg: fmt.Sprintf("ask_human %s names no tool call", ask.Kind)}
		}
		for _, c := range ins.Calls {
			q := ask.Question
			if q == "" {
				q = callQuestion(ask.Kind, c)
			}
			ir := session.InputRequired{RequestID: "req_" + x.r.newID(), Kind: ask.Kind, Question: q, Calls: []model.ToolCall{c}, Metadata: ask.Metadata}
			if d := x.agent.Approval.expiresFor(c.Name); d > 0 {
				t := x.now().Add(d)
				ir.Expires = &t
			}
			emit(x, ir)
		}
	case session.RequestPrompt, session.RequestSelect:
		if len(ins.Calls) > 0 {
			// Calls of a tool that asks the user: the question is in each
			// call's arguments.
			for _, c := range ins.Calls {
				emit(x, userQuestion(x, c))
			}
			return nil
		}
		if strings.TrimSpace(ask.Question) == "" {
			return &Error{Kind: FailPolicy, Code: CodeBadInstruction, Msg: fmt.Sprintf("ask_human %s has no question", ask.Kind)}
		}
		if ask.Kind == session.RequestSelect && len(ask.Options) == 0 {
			return &Error{Kind: FailPolicy, Code: CodeBadInstruction, Msg: "ask_human select has no options"}
		}
		emit(x, session.InputRequired{RequestID: "req_" + x.r.newID(), Kind: ask.Kind, Question: ask.Question,
			Options: ask.Options, Multi: ask.Multi && ask.Kind == session.RequestSelect, Metadata: ask.Metadata})
	case session.RequestClientTool:
		for _, c := range ins.Calls {
			emit(x, clientToolRequest(x, c))
		}
	default:
		return &Error{Kind: FailPolicy, Code: CodeBadInstruction, Msg: fmt.Sprintf("ask_human of unknown kind %q (approval, confirm, prompt or select)", ask.Kind)}
	}
	return nil
}

// hookQuestion is the request a BeforeTool hook's Ask makes about call.
func hookQuestion(x *Exec, ask *Ask, call model.ToolCall, hook int) (session.InputRequired, error) {
	bad := func(format string, args ...any) (session.InputRequired, error) {
		return session.InputRequired{}, &Error{Kind: FailHook, Code: CodeBadInstruction,
			Msg: fmt.Sprintf("a BeforeTool hook's question about %s (%s): ", call.Name, call.ID) + fmt.Sprintf(format, args...)}
	}
	q := session.InputRequired{RequestID: "req_" + x.r.newID(), Kind: ask.Kind, Question: ask.Question,
		Calls: []model.ToolCall{call}, Hook: true, HookIndex: hook, Metadata: ask.Metadata}
	switch ask.Kind {
	case session.RequestApproval:
		if q.Question == "" {
			q.Question = callQuestion(ask.Kind, call)
		}
	case session.RequestPrompt, session.RequestSelect:
		if strings.TrimSpace(q.Question) == "" {
			return bad("no question")
		}
		if ask.Kind == session.RequestSelect {
			if len(ask.Options) == 0 {
				return bad("a select without options")
			}
			q.Options, q.Multi = slices.Clone(ask.Options), ask.Multi
		}
	default:
		return bad("kind %q is not approval, prompt or select", ask.Kind)
	}
	if d := x.agent.Approval.expiresFor(call.Name); d > 0 {
		t := x.now().Add(d)
		q.Expires = &t
	}
	return q, nil
}

// userQuestion turns a call of ask_user into a prompt, or a select when
// it gives options. Arguments that do not hold a question still ask one,
// quoting them, rather than fail the run: the person can answer that.
func userQuestion(x *Exec, c model.ToolCall) session.InputRequired {
	var in struct {
		Question string         `json:"question"`
		Options  []string       `json:"options"`
		Multi    bool           `json:"multi"`
		Metadata map[string]any `json:"metadata"`
	}
	q := session.InputRequired{RequestID: "req_" + x.r.newID(), Kind: session.RequestPrompt, Calls: []model.ToolCall{c}}
	if err := json.Unmarshal(c.Arguments, &in); err != nil || strings.TrimSpace(in.Question) == "" {
		q.Question = "The assistant asks (" + c.Name + " " + clipArgs(c.Arguments) + ")"
		return q
	}
	q.Question, q.Metadata = in.Question, in.Metadata
	if len(in.Options) > 0 {
		q.Kind, q.Options, q.Multi = session.RequestSelect, in.Options, in.Multi
	}
	return q
}

func callQuestion(k session.RequestKind, c model.ToolCall) string {
	if k == session.RequestConfirm {
		return fmt.Sprintf("%s was running with arguments %s when the process running it stopped, and it must not run twice blindly. "+
			"Did it take effect? Mark it done (with its result), failed, or retry it.", c.Name, clipArgs(c.Arguments))
	}
	return fmt.Sprintf("Allow %s with arguments %s?", c.Name, clipArgs(c.Arguments))
}

func clipArgs(b json.RawMessage) string {
	const n = 500
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// Resolution is a person's answer to a pending human request.
//
//   - An approval: Decision approve, reject or edit; Arguments replace
//     the call's (edit, or approve with changes), and must fit the tool's
//     input schema.
//   - A confirmation of a call in doubt: Decision done (Result, JSON, is
//     the call's result; plain Text becomes a JSON string), failed (Reason
//     says why), or retry (the call runs again).
//   - A prompt: Text is the answer (Decision answer, or empty).
//   - A selection: Selected are the chosen options (one unless the request
//     allows several).
type Resolution struct {
	Decision  string
	Arguments json.RawMessage
	Text      string
	Selected  []string
	Result    json.RawMessage
	Reason    string
	// By names who decided; it is recorded in the event.
	By string
	// Inputs are the gateway inbox inputs this answer is (a person's
	// chat message answering a prompt): recorded in the event and marked
	// answered in its commit, so that an input answers at most once — a
	// resolution naming one that is not pending any more writes nothing.
	Inputs []string
	// Always, on an approval of one call, makes the decision stand for
	// later calls of the tool (or with the same arguments), in this
	// session or every session of the agent, until revoked.
	Always *Always
}

// Resolve records a person's answer to a pending request of a session. The
// session stays waiting until every pending request is resolved; then
// Resume continues the run (ResolveAndContinue does both). It works from
// any process, any time later: it takes the session's lease for the moment
// it writes, waiting for another resolution (of this process or another)
// to let go of it, and a request that was resolved meanwhile is an error
// (code already_resolved) naming who resolved it and when.
//
// It returns the input_resolved event.
func (r *Runner) Resolve(ctx context.Context, sessionID, requestID string, res Resolution) (*session.Event, error) {
	x, err := r.beginShort(ctx, sessionID, requestID, nil)
	if err != nil {
		return nil, err
	}
	defer r.finish(x)
	return r.resolveIn(ctx, x, requestID, res)
}

// Resolved is what ResolveAndContinue did.
type Resolved struct {
	// Event is the input_resolved event it recorded.
	Event *session.Event
	// Pending counts the requests of the session still waiting for an
	// answer; the run goes on once there are none.
	Pending int
	// Run is the run this answer continued, in the background in this
	// runner, when it was the last one awaited; nil otherwise.
	Run *Run
}

// ResolveAndContinue records a person's answer, as Resolve does, and when
// it was the last one the session waited for, continues the run in the
// background (its handle is Resolved.Run), without letting go of the
// session in between: across any number of processes resolving a
// session's requests at once, the run continues exactly once, in the
// process that recorded the last answer. A request another resolver
// answered first is an error (code already_resolved) naming who and when;
// it says so at once, rather than waiting for the run that resolver
// continued.
func (r *Runner) ResolveAndContinue(ctx context.Context, sessionID, requestID string, res Resolution) (*Resolved, error) {
	rctx, h := r.newRun(ctx, sessionID, true)
	x, err := r.beginShort(ctx, sessionID, requestID, h)
	if err != nil {
		h.cancel(nil)
		h.giveUp(err)
		return nil, err
	}
	ev, err := r.resolveIn(ctx, x, requestID, res)
	if err != nil {
		_, _, err = r.abandon(x, err)
		return nil, err
	}
	out := &Resolved{Event: ev, Pending: len(x.st.Requests)}
	if out.Pending > 0 || x.st.Status != session.StatusWaiting {
		_, _, _ = r.abandon(x, nil)
		return out, nil
	}
	// The last answer: the run goes on, from this claim and lease.
	h.begins(x.st.RunID, cmp.Or(x.st.TurnID, x.st.RunID), x.st.Seq)
	if err := x.hooks.turnStart(ctx, x.info(), ""); err != nil {
		_, _, err = r.abandon(x, err)
		return out, err
	}
	emit(x, session.RunResumed{Reason: ResumeApproval, From: session.StatusWaiting, Engine: r.engineName})
	x.lease.watch(h.cancel)
	if err := x.Commit(rctx); err != nil {
		r.finish(x)
		return out, err
	}
	out.Run = r.background(rctx, x)
	return out, nil
}

// beginShort begins a short write on session id (a resolution of its
// request rid, a revocation): the session claimed (for h, nil for the
// write alone) and leased, waiting for another short write's brief hold,
// up to resolveWait. While the session is held elsewhere, a request rid
// that is no longer pending there is reported at once (already_resolved
// or unknown_request).
func (r *Runner) beginShort(ctx context.Context, id, rid string, h *Run) (*Exec, error) {
	wctx, cancel := context.WithTimeout(ctx, resolveWait)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		x, err := r.begin(wctx, id, h, false, "")
		code := AsError(err).Code
		if err == nil || code != CodeBusy && code != CodeLeaseHeld || wctx.Err() != nil {
			return x, err
		}
		if rid != "" {
			// Held by another: is the request still waiting for an answer?
			st, lerr := r.Load(wctx, id)
			if lerr != nil {
				return nil, lerr
			}
			if st.Pending(rid) == nil {
				nerr := r.notPending(wctx, st, rid)
				var held *session.LeaseHeldError
				if re := AsError(nerr); re.Code == CodeAlreadyResolved && st.Status == session.StatusRunning {
					// Say where the run that answer continued goes on.
					switch {
					case errors.As(err, &held):
						re.Msg += "; its run goes on in " + held.Lease.Owner
					case code == CodeBusy:
						re.Msg += "; its run goes on in this process"
					}
				}
				return nil, nerr
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			return nil, err
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// resolveWait bounds how long a resolution waits for a session's lease.
const resolveWait = 15 * time.Second

// resolveIn records res on request requestID of x's session, which this
// runner holds, and returns the input_resolved event.
func (r *Runner) resolveIn(ctx context.Context, x *Exec, requestID string, res Resolution) (*session.Event, error) {
	q := x.st.Pending(requestID)
	if q == nil {
		return nil, r.notPending(ctx, x.st, requestID)
	}
	if q.Child != nil {
		// A sub-agent's request: answered in its session (which checks
		// the answer), then recorded here. One the child no longer waits
		// for (answered there, expired, or answered here by a resolution
		// that stopped before recording it) is recorded here all the same:
		// the parent must not wait for ever.
		if _, err := r.Resolve(ctx, q.Child.SessionID, q.Child.RequestID, res); err != nil {
			if code := AsError(err).Code; code != CodeAlreadyResolved && code != CodeUnknownRequest {
				return nil, err
			}
		}
		emit(x, session.InputResolved{RequestID: q.ID, Kind: q.Kind, Decision: res.Decision, Reason: res.Reason, By: res.By, Inputs: res.Inputs})
		resolved := x.pending[len(x.pending)-1]
		x.answers = res.Inputs
		if err := x.Commit(ctx); err != nil {
			return nil, err
		}
		return resolved, nil
	}
	d, result, err := x.resolution(q, res)
	if err != nil {
		return nil, err
	}
	if res.Always != nil {
		rule, err := x.newRule(q, res, d.Decision)
		if err != nil {
			return nil, err
		}
		if rule.Scope == session.RuleAgent {
			// Into the agent's rule log first: a decision recorded
			// without its rule would be worse than a rule without it.
			if err := r.addAgentRule(ctx, rule); err != nil {
				return nil, err
			}
		}
		d.Rule = rule
	}
	d.Inputs = res.Inputs
	emit(x, *d)
	resolved := x.pending[len(x.pending)-1]
	if result != nil {
		emit(x, *result)
	}
	x.answers = res.Inputs
	if err := x.Commit(ctx); err != nil {
		return nil, err
	}
	return resolved, nil
}

// resolution checks res against request q and returns the events that
// record it: the input_resolved, and for a confirmed call the tool_result
// the person gave.
func (x *Exec) resolution(q *HumanRequest, res Resolution) (*session.InputResolved, *session.ToolResult, error) {
	bad := func(code, format string, args ...any) (*session.InputResolved, *session.ToolResult, error) {
		return nil, nil, &Error{Kind: FailInput, Code: code, Msg: fmt.Sprintf(format, args...)}
	}
	d := &session.InputResolved{RequestID: q.ID, Kind: q.Kind, Decision: res.Decision, Reason: res.Reason, By: res.By}
	var call *CallState
	if q.CallID != "" {
		call = x.st.call(q.CallID)
	}
	switch q.Kind {
	case session.RequestApproval:
		switch res.Decision {
		case session.DecisionApprove, session.DecisionEdit:
			if len(res.Arguments) == 0 {
				if res.Decision == session.DecisionEdit {
					return bad(CodeBadArguments, "decision edit needs arguments")
				}
				break
			}
			if len(q.Calls) != 1 || call == nil {
				return bad(CodeBadArguments, "arguments can be edited only on a request for one call")
			}
			if err := checkArgs(res.Arguments); err != nil {
				return nil, nil, &Error{Kind: FailInput, Code: CodeBadArguments, Msg: "edited arguments", Err: err}
			}
			if t := x.agent.Tools; t != nil {
				if _, ok := t.Get(call.Call.Name); ok {
					if err := t.Validate(call.Call.Name, res.Arguments); err != nil {
						return nil, nil, &Error{Kind: FailInput, Code: CodeBadArguments, Msg: "edited arguments", Err: err}
					}
				}
			}
			d.Arguments = append(json.RawMessage(nil), res.Arguments...)
			d.Decision = session.DecisionEdit
		case session.DecisionReject:
			if len(res.Arguments) > 0 {
				return bad(CodeBadArguments, "a rejection takes no arguments")
			}
		default:
			return bad(CodeBadDecision, "decision %q is not approve, reject or edit (request %s asks for an approval)", res.Decision, q.ID)
		}
		return d, nil, nil
	case session.RequestConfirm:
		if call == nil {
			return bad(CodeUnknownRequest, "request %s is about call %s, which is no longer pending", q.ID, q.CallID)
		}
		tr := &session.ToolResult{CallID: call.Call.ID, Name: call.Call.Name}
		switch res.Decision {
		case session.DecisionDone:
			tr.OK = true
			switch {
			case len(res.Result) > 0:
				if !json.Valid(res.Result) {
					return bad(CodeBadResult, "the result is not valid JSON: %s", preview(string(res.Result)))
				}
				tr.Result = append(json.RawMessage(nil), res.Result...)
			case res.Text != "":
				tr.Result, _ = json.Marshal(res.Text)
			default:
				tr.Result = json.RawMessage(`"done (confirmed by a person)"`)
			}
			d.Result = tr.Result
		case session.DecisionFailed:
			why := cmpOr(res.Reason, res.Text, "no reason given")
			tr.Error = "the call's outcome was marked failed by a person: " + why
		case session.DecisionRetry:
			return d, nil, nil
		default:
			return bad(CodeBadDecision, "decision %q is not done, failed or retry (request %s asks whether call %s of %s took effect)",
				res.Decision, q.ID, call.Call.ID, call.Call.Name)
		}
		return d, tr, nil
	case session.RequestPrompt:
		if res.Decision != "" && res.Decision != session.DecisionAnswer {
			return bad(CodeBadDecision, "request %s asks a question: answer it with text, not decision %q", q.ID, res.Decision)
		}
		if strings.TrimSpace(res.Text) == "" {
			return bad(CodeEmptyAnswer, "request %s asks %q: the answer is empty", q.ID, q.Question)
		}
		d.Decision, d.Text = session.DecisionAnswer, res.Text
		if q.Hook {
			return d, nil, nil // the hook reads it, when the call comes up again
		}
		return d, answerResult(call, map[string]any{"answer": res.Text}), nil
	case session.RequestSelect:
		if res.Decision != "" && res.Decision != session.DecisionAnswer {
			return bad(CodeBadDecision, "request %s asks for a choice: answer it with options, not decision %q", q.ID, res.Decision)
		}
		if len(res.Selected) == 0 {
			return bad(CodeEmptyAnswer, "request %s asks to choose among %s: nothing was chosen", q.ID, strings.Join(q.Options, ", "))
		}
		if len(res.Selected) > 1 && !q.Multi {
			return bad(CodeBadAnswer, "request %s allows one choice, got %d", q.ID, len(res.Selected))
		}
		for i, s := range res.Selected {
			if !slices.Contains(q.Options, s) {
				return bad(CodeBadAnswer, "%q is not an option of request %s (options: %s)", s, q.ID, strings.Join(q.Options, ", "))
			}
			if slices.Contains(res.Selected[:i], s) {
				return bad(CodeBadAnswer, "%q is chosen twice", s)
			}
		}
		d.Decision, d.Selected = session.DecisionAnswer, slices.Clone(res.Selected)
		if q.Hook {
			return d, nil, nil
		}
		return d, answerResult(call, map[string]any{"selected": d.Selected}), nil
	case session.RequestClientTool:
		tr, err := clientToolResult(q, call, d, res)
		return d, tr, err
	}
	return bad(CodeUnknownRequest, "request %s is of unknown kind %q", q.ID, q.Kind)
}

// answerResult is the tool_result that carries a person's answer to the
// call that asked it (ask_user), or nil for a request no call made.
func answerResult(call *CallState, answer map[string]any) *session.ToolResult {
	if call == nil {
		return nil
	}
	b, _ := json.Marshal(answer)
	return &session.ToolResult{CallID: call.Call.ID, Name: call.Call.Name, OK: true, Result: b}
}

func cmpOr(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// notPending explains why requestID is not a pending request of st's
// session: it was resolved (by whom, when), or it never was one.
func (r *Runner) notPending(ctx context.Context, st *State, requestID string) error {
	for e, err := range r.store.Events(ctx, st.SessionID, 0) {
		if err != nil {
			break
		}
		if d, ok := e.Data.(*session.InputResolved); ok && d.RequestID == requestID {
			by := d.By
			if by == "" {
				by = "someone"
			}
			return &Error{Kind: FailInput, Code: CodeAlreadyResolved,
				Msg: fmt.Sprintf("request %s of session %s was already resolved by %s at %s (%s)", requestID, st.SessionID, by,
					e.Time.UTC().Format("2006-01-02 15:04:05Z"), d.Decision)}
		}
	}
	return &Error{Kind: FailInput, Code: CodeUnknownRequest,
		Msg: fmt.Sprintf("session %q has no pending request %q%s", st.SessionID, requestID, pendingList(st))}
}

func pendingList(st *State) string {
	if len(st.Requests) == 0 {
		return " (it has none)"
	}
	ids := make([]string, len(st.Requests))
	for i, q := range st.Requests {
		ids[i] = q.ID
	}
	return " (pending: " + strings.Join(ids, ", ") + ")"
}

// expire gives the requests of x's session whose deadline passed their
// default decision, by "system" with reason expired, and commits it. Every
// runner that takes the session does it first (Run, Resume, Resolve,
// Recover), so an expired request is decided by the next process that
// touches the session.
func (x *Exec) expire(ctx context.Context) error {
	now := x.now()
	var expired []HumanRequest
	for _, q := range x.st.Requests {
		if q.Expires != nil && !now.Before(*q.Expires) {
			expired = append(expired, q)
		}
	}
	for _, q := range expired {
		qq := x.st.Pending(q.ID)
		if qq == nil {
			continue
		}
		var d *session.InputResolved
		var result *session.ToolResult
		switch q.Kind {
		case session.RequestApproval, session.RequestConfirm:
			res := Resolution{Decision: session.DecisionReject, By: "system", Reason: "expired"}
			if q.Kind == session.RequestConfirm {
				res.Decision = session.DecisionFailed
			}
			var err error
			if d, result, err = x.resolution(qq, res); err != nil {
				return err
			}
		case session.RequestPrompt, session.RequestSelect:
			if q.Hook {
				// A hook's question about a call: unanswered, the call does
				// not run.
				d = &session.InputResolved{RequestID: q.ID, Kind: q.Kind, Decision: session.DecisionReject, By: "system", Reason: "expired"}
				break
			}
			fallthrough
		default:
			const none = "(no answer: the question expired)"
			d = &session.InputResolved{RequestID: q.ID, Kind: q.Kind, Decision: session.DecisionAnswer, By: "system", Reason: "expired", Text: none}
			if q.CallID != "" {
				result = answerResult(x.st.call(q.CallID), map[string]any{"answer": none})
			}
		}
		emit(x, *d)
		if result != nil {
			emit(x, *result)
		}
	}
	if len(expired) == 0 {
		return nil
	}
	return x.Commit(ctx)
}
