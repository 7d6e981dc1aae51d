package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	agenttool "github.com/agentrt/agentrt/tool"
)

// Input is an agent tool's input.
type Input struct {
	Message string `json:"message" jsonschema:"what to say to the agent"`
	Session string `json:"session,omitempty" jsonschema:"the session to continue (an earlier result's session_id); empty: a new session"`
}

// Output is an agent tool's structured result.
type Output struct {
	SessionID string `json:"session_id" jsonschema:"the session: give it as session to continue the conversation"`
	RunID     string `json:"run_id,omitempty"`
	// Status is the turn's: done, failed, canceled, paused, or waiting
	// (for a person: Requests).
	Status string `json:"status" jsonschema:"done, failed, canceled, paused, or waiting (for the requests)"`
	Answer string `json:"answer,omitempty" jsonschema:"the agent's answer"`
	// Code and Error say why a failed or canceled turn ended: agentrt's
	// stable error code (docs/errors.md) and its message.
	Code  string `json:"code,omitempty" jsonschema:"why a failed or canceled turn ended: agentrt's error code"`
	Error string `json:"error,omitempty"`
	Usage Usage  `json:"usage"`
	// Requests wait for a person (status waiting).
	Requests []Request `json:"requests,omitempty"`
}

// Usage is a turn's token use.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Request is a request that waits for a person, and how to answer it.
type Request struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind" jsonschema:"approval, prompt, select or confirm"`
	Question string   `json:"question,omitempty"`
	Options  []string `json:"options,omitempty"`
	Calls    []Call   `json:"calls,omitempty"`
	// Resolve is the REST endpoint that answers it.
	Resolve string `json:"resolve" jsonschema:"POST this endpoint of agentrt serve to answer (docs/http-api.md)"`
}

// Call is a tool call a request is about.
type Call struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments any    `json:"arguments,omitempty"`
}

// tool is one agent's tool.
type tool struct {
	cfg   Config
	agent string
	// args checks a call's arguments against the tool's input schema.
	args *agenttool.Validator
}

// outcome is what following a turn found.
type outcome struct {
	session  string
	runID    string
	status   session.Status
	answer   string
	errCode  string
	errMsg   string
	usage    model.Usage
	requests []*session.InputRequired // asked and not answered, in order
	last     int64                    // the last committed seq seen
	// declined: the client declined to answer; it is not asked again.
	declined bool
}

// state is an input-required result's request state: where the call
// goes on from when the client calls again with its answers. The call's
// tenant scopes it (a state naming another tenant's session finds
// nothing), and the runner checks each answer against what is pending.
type state struct {
	Session string `json:"s"`
	RunID   string `json:"r"`
	After   int64  `json:"a"`
}

// call runs one turn of the agent: the message into its session through
// the gateway, the turn followed to its end; a turn that waits for a
// person asks the client (elicitation) and goes on with the answers.
func (t *tool) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	ctx = t.scope(ctx, req)
	p := &progress{req: req, token: req.Params.GetProgressToken()}
	var o *outcome
	var err error
	if req.Params.RequestState != "" {
		o, err = t.answered(ctx, req, p)
	} else {
		// The arguments are checked against the tool's own input
		// schema, as the SDK's typed tools are: a key it does not have
		// (additionalProperties: false) is refused, not ignored.
		if err := t.args.Validate(req.Params.Arguments); err != nil {
			return toolError("%s: %v", agentrt.CodeMalformedRequest, err), nil
		}
		var in Input
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return toolError("%s: the arguments are not this tool's input {\"message\": \"...\", \"session\": \"...\"}", agentrt.CodeMalformedRequest), nil
			}
		}
		o, err = t.submit(ctx, in, p)
	}
	for err == nil && o.status == session.StatusWaiting && !o.declined {
		switch {
		case mrtrElicitation(req.Session):
			// The client answers and calls again (answered).
			return inputRequired(o)
		case legacyElicitation(req.Session):
			var asked bool
			if asked, err = t.elicit(ctx, req, o); err != nil || !asked {
				break
			}
			o, err = t.followOn(ctx, o.session, o.last, o.runID, p)
			continue
		}
		break
	}
	if err != nil {
		return toolError("%s", describe(err)), nil
	}
	return result(o), nil
}

// scope is ctx in the call's tenant and actor: the API key's over HTTP,
// the configured ones over stdio.
func (t *tool) scope(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	tenant, actor := t.cfg.Tenant, t.cfg.Actor
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		if v, ok := req.Extra.TokenInfo.Extra[extraTenant].(string); ok {
			tenant = v
		}
		if v, ok := req.Extra.TokenInfo.Extra[extraActor].(string); ok {
			actor = v
		}
	}
	return agentrt.WithActor(session.WithTenant(ctx, tenant), actor)
}

// submit stores the message as the session's input (a new session when
// none is named) and follows the turn that answers it.
func (t *tool) submit(ctx context.Context, in Input, p *progress) (*outcome, error) {
	if strings.TrimSpace(in.Message) == "" {
		return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeEmptyInput, Msg: "message is empty: say something to the agent"}
	}
	r := t.cfg.Server.Runner()
	id := in.Session
	if id == "" {
		ss, err := r.CreateSession(ctx, t.agent, "", map[string]string{"source": "mcp"})
		if err != nil {
			return nil, err
		}
		id = ss.ID
	} else {
		st, err := t.session(ctx, id)
		if err != nil {
			return nil, err
		}
		if st.Agent != t.agent {
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeWrongAgent,
				Msg: fmt.Sprintf("session %s is agent %s's: call the tool %s to continue it", id, st.Agent, st.Agent)}
		}
	}
	turn, err := t.cfg.Server.SubmitTurn(ctx, gateway.Input{Source: id, Session: id, Agent: t.agent, Text: in.Message})
	if err != nil {
		return nil, err
	}
	defer turn.Close()
	return t.follow(ctx, turn.Events(), id, "", p)
}

// session is the state of the session a call names, in the call's
// tenant. A session the tenant does not have yet is started with that id
// for the tool's agent, as docs/protocols.md says of every id a
// protocol's client makes up (AG-UI's threadId, A2A's contextId): another
// tenant's session of that id stays out of reach.
func (t *tool) session(ctx context.Context, id string) (*agentrt.State, error) {
	r := t.cfg.Server.Runner()
	st, err := r.Load(ctx, id)
	if err == nil || agentrt.AsError(err).ErrorCode() != agentrt.CodeNotFound {
		return st, err
	}
	if err := session.CheckID(id); err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadSessionID, Msg: "session: " + err.Error()}
	}
	_, err = r.CreateSession(ctx, t.agent, id, map[string]string{"source": "mcp"})
	if err != nil && agentrt.AsError(err).ErrorCode() != agentrt.CodeSessionExists {
		return nil, err
	}
	// Made now, or by a call of the same id a moment before.
	return r.Load(ctx, id)
}

// answered goes on with a call the client makes again with its answers
// to the requests of an input-required result (protocol 2026-07-28).
func (t *tool) answered(ctx context.Context, req *sdk.CallToolRequest, p *progress) (*outcome, error) {
	var st state
	if err := json.Unmarshal([]byte(req.Params.RequestState), &st); err != nil || st.Session == "" {
		return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeMalformedRequest, Msg: "requestState is not one this server gave"}
	}
	ss, err := t.cfg.Server.Runner().Load(ctx, st.Session)
	if err != nil {
		return nil, err
	}
	if ss.Agent != t.agent {
		return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeWrongAgent, Msg: "requestState names another agent's session"}
	}
	pending, asked, err := t.requests(ctx, st.Session, ss.Requests)
	if err != nil {
		return nil, err
	}
	// Every answer is checked before any is recorded: a call with one
	// bad answer records none.
	type answer struct {
		r   *session.InputRequired
		res *sdk.ElicitResult
	}
	var answers []answer
	for rid, resp := range req.Params.InputResponses {
		er, ok := resp.(*sdk.ElicitResult)
		if !ok {
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeMalformedRequest, Msg: fmt.Sprintf("input response %q is not an elicitation result", rid)}
		}
		i := slices.IndexFunc(pending, func(r *session.InputRequired) bool { return r.RequestID == rid })
		switch {
		case i >= 0:
			answers = append(answers, answer{pending[i], er})
		case !asked[rid]:
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnknownRequest,
				Msg: fmt.Sprintf("input response %q answers no request of session %s (it waits for %s)", rid, st.Session, requestIDs(pending))}
		}
		// Asked and no longer pending: answered elsewhere meanwhile (the
		// REST API, the CLI); that answer stands.
	}
	// In the order asked, so that the run goes on after the last.
	slices.SortFunc(answers, func(a, b answer) int {
		return slices.Index(pending, a.r) - slices.Index(pending, b.r)
	})
	declined := false
	for _, a := range answers {
		done, err := t.resolve(ctx, st.Session, a.r, a.res)
		if agentrt.AsError(err).ErrorCode() == agentrt.CodeAlreadyResolved {
			continue // answered elsewhere a moment ago
		}
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", a.r.RequestID, err)
		}
		declined = declined || !done
	}
	if ss, err = t.cfg.Server.Runner().Load(ctx, st.Session); err != nil {
		return nil, err
	}
	if ss.Status == session.StatusWaiting {
		// Not every request is answered: the turn has not gone on.
		o := &outcome{session: st.Session, runID: st.RunID, last: ss.Seq, status: session.StatusWaiting, declined: declined}
		if o.requests, _, err = t.requests(ctx, st.Session, ss.Requests); err != nil {
			return nil, err
		}
		return o, nil
	}
	return t.followOn(ctx, st.Session, st.After, st.RunID, p)
}

// requests reads session id's log for its human requests: the
// input_required events of those that wait (reqs, from its state), in the
// order asked, which have the calls an approval is about; and the ids of
// every request it asked.
func (t *tool) requests(ctx context.Context, id string, reqs []agentrt.HumanRequest) (pending []*session.InputRequired, asked map[string]bool, _ error) {
	asked = map[string]bool{}
	for ev, err := range t.cfg.Server.Runner().Store().Events(ctx, id, 0) {
		if err != nil {
			return nil, nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session's events", Err: err}
		}
		d, ok := ev.Data.(*session.InputRequired)
		if !ok {
			continue
		}
		asked[d.RequestID] = true
		if slices.ContainsFunc(reqs, func(h agentrt.HumanRequest) bool { return h.ID == d.RequestID }) {
			pending = slices.DeleteFunc(pending, func(r *session.InputRequired) bool { return r.RequestID == d.RequestID })
			pending = append(pending, d)
		}
	}
	return pending, asked, nil
}

func requestIDs(rs []*session.InputRequired) string {
	if len(rs) == 0 {
		return "none"
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.RequestID
	}
	return strings.Join(ids, ", ")
}

// followOn follows the turn of session id that goes on after seq after
// (the run an answer resumed), through the server's stream of it.
func (t *tool) followOn(ctx context.Context, id string, after int64, runID string, p *progress) (*outcome, error) {
	turn, err := t.cfg.Server.FollowSession(ctx, id, after)
	if err != nil {
		return nil, err
	}
	defer turn.Close()
	return t.follow(ctx, turn.Events(), id, runID, p)
}

// follow reads a turn's events to the end of its run (through the runs
// an interruption restarts), reporting progress on the way. runID, when
// set, is the run to follow; otherwise the first run_started's.
func (t *tool) follow(ctx context.Context, evs iter.Seq2[*session.Event, error], id, runID string, p *progress) (*outcome, error) {
	o := &outcome{session: id, runID: runID}
	// Which events are the turn's, and where it ends, is the gateway's
	// to say: a restart after newer input goes on in a new run, a
	// person's interrupt ends the turn.
	track := gateway.TrackRun(runID)
	if runID == "" {
		track = &gateway.TurnTracker{}
	}
	for ev, err := range evs {
		if err != nil {
			return nil, err
		}
		if ev.Seq == 0 {
			continue
		}
		o.last = ev.Seq
		keep, end := track.See(ev)
		if !keep {
			if end != nil {
				// Ended by an event of another turn (handed over): the
				// turn is over for this call, as interrupted.
				o.status, o.errCode, o.errMsg = session.StatusInterrupted, agentrt.CodeInterrupted, end.Reason
				return o, nil
			}
			continue
		}
		if ev.Type == session.TypeRunStarted {
			o.runID = ev.RunID
		}
		switch d := ev.Data.(type) {
		case *session.RoundStarted:
			p.notify(ctx, fmt.Sprintf("round %d", d.Round))
		case *session.ToolCall:
			p.notify(ctx, "calling "+d.Name)
		case *session.ToolResult:
			if d.OK {
				p.notify(ctx, d.Name+" done")
			} else {
				p.notify(ctx, d.Name+" failed: "+d.Error)
			}
		case *session.PlanCreated:
			p.planned(d)
		case *session.PlanStepFinished:
			p.planDone++
		case *session.PlanStepStarted:
			msg := fmt.Sprintf("plan step %d", d.Index+1)
			if p.planSteps > 0 {
				msg += fmt.Sprintf(" of %d", p.planSteps)
			}
			p.notify(ctx, msg)
		case *session.InputRequired:
			o.requests = append(o.requests, d)
			p.notify(ctx, "waiting for a person: "+d.Question)
		case *session.InputResolved:
			o.requests = slices.DeleteFunc(o.requests, func(r *session.InputRequired) bool { return r.RequestID == d.RequestID })
		case *session.Final:
			o.answer = d.Text
		case *session.Error:
			// An error the run goes on after (a model call retried or
			// replaced) names its model or attempt; the run's own failure
			// names neither.
			if d.Model == "" && d.Attempt == 0 {
				o.errCode, o.errMsg = d.Code, d.Message
			}
		case *session.RunFinished:
			if end == nil {
				continue // newer input restarts the turn
			}
			o.status, o.usage = d.Status, d.Usage
			if d.Reason != "" && o.errMsg == "" && d.Status != session.StatusDone {
				o.errMsg = d.Reason
			}
			switch {
			case d.Status == session.StatusCanceled:
				o.errCode = agentrt.CodeCanceled
			case d.Status == session.StatusInterrupted:
				o.errCode, o.errMsg = agentrt.CodeInterrupted, end.Reason
			case d.Status == session.StatusFailed && o.errCode == "":
				o.errCode = cmp.Or(d.Reason, agentrt.CodeInternal)
			}
			return o, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, &agentrt.Error{Kind: agentrt.FailInternal, Msg: "the turn's events ended before it finished"}
}

// result is the tool result of a turn that ended (or waits on a client
// that cannot be asked).
func result(o *outcome) *sdk.CallToolResult {
	out := Output{SessionID: o.session, RunID: o.runID, Status: string(o.status), Answer: o.answer,
		Usage: Usage{InputTokens: o.usage.InputTokens, OutputTokens: o.usage.OutputTokens}}
	var text string
	switch o.status {
	case session.StatusDone:
		text = o.answer
	case session.StatusWaiting:
		var b strings.Builder
		fmt.Fprintf(&b, "The agent waits for a person (session %s). Answer each request, then call this tool again with session %q to follow the rest:", o.session, o.session)
		for _, r := range o.requests {
			q := requestOf(o.session, r)
			out.Requests = append(out.Requests, q)
			fmt.Fprintf(&b, "\n- request %s (%s): %s", q.ID, q.Kind, q.Question)
			for _, c := range q.Calls {
				fmt.Fprintf(&b, "\n  call %s %s", c.Name, c.Arguments)
			}
			fmt.Fprintf(&b, "\n  answer with POST %s (agentrt serve), or agentrt %s %s %s", q.Resolve, cliVerb(r.Kind), o.session, q.ID)
		}
		text = b.String()
	default:
		out.Code, out.Error = o.errCode, o.errMsg
		// A failed or canceled turn's text starts with its code, as a
		// call refused for bad input does (toolError).
		switch o.status {
		case session.StatusFailed, session.StatusPaused:
			text = fmt.Sprintf("The agent's turn %s", o.status)
		case session.StatusCanceled:
			text = "The agent's turn was canceled"
		case session.StatusInterrupted:
			text = "The agent's turn was interrupted"
		default:
			text = fmt.Sprintf("The agent's turn ended %s", o.status)
		}
		if o.errCode != "" {
			text = o.errCode + ": " + text
		}
		if o.errMsg != "" {
			text += ": " + o.errMsg
		}
		text += fmt.Sprintf(" (session %s).", o.session)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: out,
		IsError: o.status == session.StatusFailed || o.status == session.StatusCanceled || o.status == session.StatusInterrupted}
}

func cliVerb(k session.RequestKind) string {
	if k == session.RequestApproval {
		return "approve"
	}
	return "respond"
}

func requestOf(id string, r *session.InputRequired) Request {
	q := Request{ID: r.RequestID, Kind: string(r.Kind), Question: r.Question, Options: r.Options,
		Resolve: "/v1/sessions/" + id + "/requests/" + r.RequestID}
	for _, c := range r.Calls {
		var args any
		if json.Unmarshal(c.Arguments, &args) != nil {
			args = string(c.Arguments)
		}
		q.Calls = append(q.Calls, Call{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return q
}

// toolError is a call that could not run, as the tool's error result
// (which the client's model reads), not a protocol error.
func toolError(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}, IsError: true}
}

// describe is an error as the tool result says it: its code and the
// sentence the HTTP API would answer (server.StatusOf: nothing of the
// store's or Go's).
func describe(err error) string {
	_, d := server.StatusOf(err)
	return d.Code + ": " + d.Message
}

// progress sends a call's progress notifications, when its client asked
// for them with a progress token.
//
// A notification carries no total: MCP's progress value must grow with
// every notification of the call, and how many rounds and tool calls a
// turn takes is the model's to decide as it goes (max_rounds is a
// ceiling, not a count). The one count known ahead, a plan's steps, is
// in the plan steps' messages ("plan step 2 of 5").
type progress struct {
	req   *sdk.CallToolRequest
	token any
	n     float64
	// planSteps is the number of steps of the turn's plan as written, 0
	// while unknown; planDone counts the steps finished since.
	planSteps, planDone int
}

// planned records a plan written for the turn. A plan written again
// after a step failed (source replan) comes after the steps finished so
// far; its count is known only if the first one's was.
func (p *progress) planned(d *session.PlanCreated) {
	var pl struct {
		Steps []json.RawMessage `json:"steps"`
	}
	n := 0
	if json.Unmarshal(d.Plan, &pl) == nil {
		n = len(pl.Steps)
	}
	switch {
	case d.Source != "replan":
		p.planSteps, p.planDone = n, 0
	case p.planSteps > 0 && n > 0:
		p.planSteps = p.planDone + n
	default:
		p.planSteps = 0
	}
}

func (p *progress) notify(ctx context.Context, msg string) {
	if p.token == nil {
		return
	}
	p.n++
	// A notification that cannot be sent (the client went away) does not
	// stop the turn: the log has it all.
	_ = p.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: msg})
}
