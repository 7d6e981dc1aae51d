package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
	"github.com/cenkalti/backoff/v5"
)

// builtinExecutor returns the built-in executor for k, or nil. (A switch
// rather than a map: the runner looks one up at every step.)
func builtinExecutor(k Kind) Executor {
	switch k {
	case KindCallModel:
		return CallModel
	case KindCallTools:
		return CallTools
	case KindAskHuman:
		return AskHuman
	case KindFinish:
		return Finish
	case KindPause:
		return Pause
	case KindPlan:
		return PlanModel
	case KindPlanStep:
		return ExecutePlanStep
	case KindPlanFinish:
		return PlanFinish
	}
	return nil
}

// CallModel is the built-in call_model executor: one round of the
// conversation, the model's reply recorded as model_finished (see
// Exec.Complete).
//
// Before the call the history is compacted when the agent's Compaction
// says so; a request the provider refuses as too long is compacted and
// made once more.
func CallModel(ctx context.Context, x *Exec, _ Instruction) error {
	if x.held {
		x.steerAsked(ctx)
	}
	for _, s := range x.handle.takeSteer() {
		if s.Steer != "" && slices.Contains(x.st.Steered, s.Steer) {
			continue // taken already, by the session's last owner
		}
		// Input that came while the turn ran: the model's next message,
		// answered by this run's turn.
		s.TurnID = x.st.TurnID
		emit(x, s)
		x.answers = append(x.answers, s.Inputs...)
	}
	if reason := x.compactionDue(); reason != "" && !x.st.InModel {
		if _, err := x.compact(ctx, reason); err != nil {
			return err
		}
	}
	_, err := x.Complete(ctx, ModelCall{})
	if err == nil || !isContextLength(err) || ctx.Err() != nil {
		return err
	}
	// Recorded, then compacted whatever the settings, then once more.
	re := AsError(err)
	emit(x, session.Error{Code: re.ErrorCode(), Message: re.Error(), Recoverable: true, Model: x.sessionModel().Name(), Attempt: x.st.Attempt})
	compacted, cerr := x.compact(ctx, "context_length")
	if cerr != nil {
		return cerr
	}
	if !compacted {
		return err // nothing left to compact
	}
	_, err = x.Complete(ctx, ModelCall{})
	return err
}

// ModelCall is a model call an executor makes through Exec.Complete.
type ModelCall struct {
	// Request is sent as it is (before-model hooks may replace it); nil
	// means the conversation's request: the agent's system prompt, the
	// session's history and the agent's tools.
	Request *model.Request
	// Purpose is empty for a round of the conversation, whose reply
	// becomes the assistant's next message. Any other value ("plan",
	// "summary") labels a call whose reply the executor uses itself: its
	// events say so, and the history does not change.
	Purpose string
	// Model, when set, answers instead of the agent's model and its
	// fallbacks (a compaction.model, say).
	Model model.Model
	// Quiet keeps the reply's text from the live token events (a summary
	// is not the answer).
	Quiet bool
}

// modelOf is the model a call goes to first: the call's own (a
// summariser's), else the one the session changed to (State.Model), else
// the agent's.
func (x *Exec) modelOf(c ModelCall) (model.Model, error) {
	switch {
	case c.Model != nil:
		return c.Model, nil
	case x.st.Model == "":
		return x.agent.Model, nil
	}
	return x.agent.modelNamed(x.st.Model)
}

// sessionModel is the model of the session's conversation calls: the one
// it changed to, if that is found, else the agent's.
func (x *Exec) sessionModel() model.Model {
	if m, err := x.modelOf(ModelCall{}); err == nil {
		return m
	}
	return x.agent.Model
}

// Complete calls the agent's model as the built-in call_model does, for
// any executor: the before-model and after-model hooks; the reply
// streamed as token events (or asked for whole, for an agent with
// NoStream); one attempt without streaming after a stream that broke half
// way; retries of recoverable failures with backoff; then the agent's
// fallback models in order. Every attempt is a model_started event,
// committed before the call; every failed attempt an error event; the
// reply a model_finished event (not yet committed). It returns the reply,
// or the last failure once every model has failed.
//
// A conversation round (empty Purpose) starts with round_started; when
// the process running the session stopped during the round's call, the
// call is made again as the round's next attempt.
func (x *Exec) Complete(ctx context.Context, c ModelCall) (*model.Response, error) {
	st, a := x.st, x.agent
	attempt := 1
	m, err := x.modelOf(c)
	if err != nil {
		return nil, err
	}
	started := session.ModelStarted{Model: m.Name(), Attempt: attempt, Mode: x.mode(m, false), Purpose: c.Purpose}
	switch {
	case c.Purpose == "" && st.InModel:
		// The process stopped during this call; this is a new attempt.
		started.Attempt = st.Attempt + 1
		attempt = started.Attempt
		emit(x, started)
	case c.Purpose == "":
		p := newPair[session.RoundStarted, session.ModelStarted](x,
			session.RoundStarted{Round: st.Round + 1, MaxRounds: st.RoundBase + a.Limits.maxRounds()})
		x.add(&p.a.ev)
		x.add(fill(x, p, started, time.Time{}))
	default:
		emit(x, started)
	}
	if err := x.Commit(ctx); err != nil {
		return nil, err
	}
	req := c.Request
	if req == nil {
		req = x.request()
	}
	if req, err = x.withMedia(ctx, m, req); err != nil {
		return nil, err
	}
	var built []byte // the request before the hooks: only when there are some
	if x.hooks.rewritesRequests() {
		built, _ = json.Marshal(req)
	}
	req, err = x.hooks.beforeModel(ctx, x.info(), req)
	if err != nil {
		return nil, err
	}
	sent, digest := x.r.hooked(built, req)
	// The call starts now: model_started was stamped just above, so its
	// commit's clock reading serves (one reading fewer per model call).
	start := x.stamp
	if start.IsZero() {
		start = x.now()
	}
	if err := x.handle.enterModel(); err != nil {
		return nil, err
	}
	x.quiet = c.Quiet
	resp, err := x.callModel(ctx, m, req, a.NoStream)
	if err != nil {
		models := []model.Model{m} // the call's own, or the session's
		if c.Model == nil && x.st.Model == "" {
			models = append(models, a.Fallbacks...)
		}
		m, resp, start, err = x.retryModel(ctx, req, models, attempt, c.Purpose, err)
	}
	x.quiet = false
	x.handle.leaveModel()
	if err != nil {
		return nil, err
	}
	if resp, err = x.hooks.afterModel(ctx, x.info(), resp); err != nil {
		return nil, err
	}
	calls, content, finish := resp.Message.ToolCalls, resp.Message.Text(), resp.FinishReason
	var renamed []string
	if c.Purpose == "" {
		if len(calls) == 0 && len(a.ToolSpecs()) > 0 {
			// Calls written in the text, by a model without native ones.
			if ic, rest := inlineCalls(content, inlineModeOf(m), a.resolveTool); ic != nil {
				calls, content, finish = ic, rest, model.FinishToolCalls
			}
		}
		calls, renamed = normalizeCalls(calls, st, x.announced, finish, a.resolveTool)
	}
	end := x.now() // the event's time, and the end of the call's latency
	fin := session.ModelFinished{
		Model:        m.Name(),
		Content:      content,
		ToolCalls:    calls,
		Usage:        resp.Usage,
		FinishReason: finish,
		LatencyMS:    end.Sub(start).Milliseconds(),
		Purpose:      c.Purpose,

		RenamedCallIDs: renamed,
		Sent:           sent,
		SentDigest:     digest,
	}
	if p := x.finishPair; p != nil {
		// Allocated with the reply's first tool-call delta.
		x.finishPair = nil
		x.add(fill(x, p, fin, end))
	} else {
		x.add(newEvent(x, fin, end))
	}
	return resp, nil
}

// mode is the Mode of a model_started event: "generate" for an attempt
// that does not stream.
func (x *Exec) mode(m model.Model, generate bool) string {
	if generate || x.agent.NoStream && canGenerate(m) {
		return "generate"
	}
	return ""
}

func canGenerate(m model.Model) bool {
	_, ok := m.(model.Generator)
	return ok
}

// callModel makes one attempt at a model call: streamed, or with Generate.
func (x *Exec) callModel(ctx context.Context, m model.Model, req *model.Request, generate bool) (*model.Response, error) {
	if generate && canGenerate(m) {
		resp, err := m.(model.Generator).Generate(ctx, req)
		if err != nil {
			return nil, x.modelError(ctx, m, err)
		}
		if text := resp.Message.Text(); text != "" {
			x.liveToken(text) // the reply's text, in one token
		}
		return resp, nil
	}
	if err := x.stream(ctx, m, req); err != nil {
		return nil, err
	}
	resp, err := x.asm.Response()
	if err != nil {
		return nil, &Error{Kind: FailModel, Code: string(model.CodeServer), Err: &model.Error{
			Code: model.CodeServer, Model: m.Name(), Message: "the model sent an empty reply", Err: err}}
	}
	return resp, nil
}

// retryModel carries on after a failed model call: it retries the model,
// once without streaming if its stream broke half way, then with backoff;
// then each fallback model in turn. It returns the model that answered,
// its reply and when its attempt began, or the last error.
func (x *Exec) retryModel(ctx context.Context, req *model.Request, models []model.Model, attempt int, purpose string, err error) (model.Model, *model.Response, time.Time, error) {
	a := x.agent
	p := a.Retry
	bo := &backoff.ExponentialBackOff{InitialInterval: cmp.Or(p.InitialDelay, time.Second), RandomizationFactor: 0.5,
		Multiplier: 2, MaxInterval: cmp.Or(p.MaxDelay, 30*time.Second)}
	bo.Reset()
	mi, tries, generated := 0, 1, false
	for {
		re := AsError(err)
		if re.Kind == FailCanceled || ctx.Err() != nil || x.stopped {
			return nil, nil, time.Time{}, err
		}
		m := models[mi]
		me, classified := model.AsError(err)
		var wait time.Duration
		next, generate := mi, false
		switch {
		case classified && me.Streamed && me.Recoverable() && canGenerate(m) && !generated:
			generate, generated = true, true
		case classified && me.Recoverable() && tries < p.maxAttempts():
			tries++
			wait = min(max(me.RetryAfter, bo.NextBackOff()), bo.MaxInterval)
		case mi+1 < len(models):
			next, tries, generated = mi+1, 1, false
			bo.Reset()
		default:
			return nil, nil, time.Time{}, err
		}
		emit(x, session.Error{Code: re.ErrorCode(), Message: re.Error(), Recoverable: re.IsRecoverable(),
			Model: m.Name(), Attempt: attempt, RetryInMS: wait.Milliseconds()})
		if cerr := x.Commit(ctx); cerr != nil {
			return nil, nil, time.Time{}, cerr
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, nil, time.Time{}, ctx.Err()
			}
		}
		mi, m = next, models[next]
		attempt++
		generate = generate || a.NoStream
		emit(x, session.ModelStarted{Model: m.Name(), Attempt: attempt, Mode: x.mode(m, generate), Purpose: purpose})
		if cerr := x.Commit(ctx); cerr != nil {
			return nil, nil, time.Time{}, cerr
		}
		start := x.stamp
		if start.IsZero() {
			start = x.now()
		}
		var resp *model.Response
		if resp, err = x.callModel(ctx, m, req, generate); err == nil {
			return m, resp, start, nil
		}
	}
}

// modelError wraps a model's failure. A provider's *model.Error gives its
// code and verdict; the caller's cancellation and ctx's end are kept.
func (x *Exec) modelError(ctx context.Context, m model.Model, err error) error {
	switch {
	case err == errStopped:
		return &Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the caller stopped reading events"}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if me, ok := model.AsError(err); ok {
		r := me.Recoverable()
		return &Error{Kind: FailModel, Code: string(me.Code), Err: err, Recoverable: &r}
	}
	return &Error{Kind: FailModel, Code: CodeModelError, Msg: "model " + m.Name(), Err: err}
}

// stream streams m's reply to req into x.asm, yielding its text as token
// events, its tool calls' fragments as tool_call_delta events and its
// pulses as pulse tokens.
func (x *Exec) stream(ctx context.Context, m model.Model, req *model.Request) error {
	// The loop body only breaks, never returns, and keeps its error in x:
	// a return from the body of a range over a function, or a local it
	// assigns, would live on the heap, an allocation per model call each.
	x.streamErr = nil
	x.asm.Reset()
	x.announced = x.announced[:0]
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			x.streamErr = err
			break
		}
		if c.Pulse {
			x.livePulse()
		} else {
			if c.Text != "" {
				x.liveToken(c.Text)
			}
			for i := range c.ToolCalls {
				if d := &c.ToolCalls[i]; d.Arguments != "" || d.ID != "" || d.Name != "" {
					x.liveToolCallDelta(d) // an empty fragment tells nobody anything
				}
			}
			x.asm.Add(c)
		}
		if x.stopped {
			x.streamErr = errStopped
			break
		}
	}
	if x.streamErr == nil {
		return nil
	}
	return x.modelError(ctx, m, x.streamErr)
}

// errStopped ends a model stream whose events nobody reads any more.
var errStopped = errors.New("the caller stopped reading events")

// normalizeCalls drops calls without a usable name (empty, or "None" as
// some models write it), gives calls without an id, or with the id of an
// earlier call of the same reply or of the session's history, a
// deterministic one (some OpenAI-compatible servers repeat ids, "call_1"
// in every reply: a call's id names it in the session — a sub-agent's
// child session, a delegation's earlier task, the idempotency key a tool
// passes on — so a repeated one would be taken for the earlier call), and
// keeps arguments that are not valid JSON as a JSON string so the log
// stays valid JSON and the tool step can tell the model what was wrong.
// The ids depend only on the reply and st (its history, the ids the
// model repeated before, and the seq the model_finished event that
// records them will have), so the log holds them and a resume agrees.
// renamed are the model's ids that were taken (a model that repeats ids:
// model_finished records them, so that the session remembers them once
// the calls that had them first are compacted out of the history).
// A call whose fragments were streamed live keeps the id they said
// (announced: Exec.liveCallID applied this rule to them; each is given
// out once, to the first call with its model id, and then cleared).
func normalizeCalls(calls []model.ToolCall, st *State, announced []announcedID, finish model.FinishReason, resolve func(string) (string, bool)) (_ []model.ToolCall, renamed []string) {
	seq := st.Seq + 1
	out := calls[:0]
	for i, c := range calls {
		name := strings.TrimSpace(c.Name)
		if name == "" || strings.EqualFold(name, "none") || strings.EqualFold(name, "null") {
			continue
		}
		if known, ok := resolve(name); ok {
			name = known // "functions.search", "Search": the agent's search
		}
		c.Name = name
		if j := slices.IndexFunc(announced, func(a announcedID) bool { return a.model != "" && a.model == c.ID }); j >= 0 {
			if announced[j].id != c.ID && !slices.Contains(renamed, c.ID) {
				renamed = append(renamed, c.ID)
			}
			c.ID = announced[j].id
			announced[j].model = ""
		} else if c.ID == "" || hasID(out, c.ID) || st.callIDTaken(c.ID) {
			if c.ID != "" && !slices.Contains(renamed, c.ID) {
				renamed = append(renamed, c.ID)
			}
			c.ID = freshCallID(seq, i, func(id string) bool {
				return hasID(out, id) || hasID(calls[i+1:], id) || st.callIDTaken(id)
			})
		}
		if !json.Valid(c.Arguments) {
			if fixed, ok := model.RepairArguments(c.Arguments, finish); ok {
				c.Arguments = fixed
			} else {
				b, _ := json.Marshal(string(c.Arguments))
				c.Arguments = b
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, renamed
	}
	return out, renamed
}

// freshCallID is the id the runtime gives call i of the reply that
// model_finished seq records: call_<seq>_<i>, lengthened until taken
// says no call has it.
func freshCallID(seq int64, i int, taken func(string) bool) string {
	id := "call_" + strconv.FormatInt(seq, 10) + "_" + strconv.Itoa(i)
	for taken(id) {
		id += "_"
	}
	return id
}

// usedID reports whether a call of history has id.
func usedID(history []model.Message, id string) bool {
	for i := range history {
		if history[i].Role == model.RoleAssistant && hasID(history[i].ToolCalls, id) {
			return true
		}
	}
	return false
}

func hasID(calls []model.ToolCall, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}

// request builds the model request from the state, reusing buffers.
func (x *Exec) request() *model.Request {
	msgs := x.st.Messages
	switch {
	case x.hooks.rewritesRequests():
		// A before-model hook may change the request: it gets a deep copy
		// of the history, which it cannot alias into the state's.
		x.msgs = appendCopies(x.msgs[:0], AppendSanitized(nil, x.st.Messages))
		msgs = x.msgs
	case x.checked <= len(msgs) && Consistent(msgs[x.checked:]):
		// The usual case: the model gets the state's history itself, not
		// a copy (a Model must not modify its request). The messages up to
		// x.checked were found consistent earlier in this run and end a
		// complete group, so only those added since need checking (a
		// policy may call the model with calls unanswered).
		x.checked = len(msgs)
	default:
		x.msgs = AppendSanitized(x.msgs[:0], x.st.Messages)
		msgs = x.msgs
	}
	// Capacity capped at the length: a model that appends to its request's
	// messages gets a new array instead of writing into the state's.
	x.req = model.Request{System: x.systemPrompt(), Messages: msgs[:len(msgs):len(msgs)], Tools: x.toolSpecs()}
	return &x.req
}

// appendCopies appends deep copies of msgs to dst: their parts, tool calls
// and argument bytes are new.
func appendCopies(dst, msgs []model.Message) []model.Message {
	for _, m := range msgs {
		m.Parts = append([]model.Part(nil), m.Parts...)
		if m.ToolCalls != nil {
			calls := make([]model.ToolCall, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				c.Arguments = append(json.RawMessage(nil), c.Arguments...)
				calls[i] = c
			}
			m.ToolCalls = calls
		}
		dst = append(dst, m)
	}
	return dst
}

// CallTools is the built-in call_tools executor. It announces each call
// (tool_call, committed before any runs), runs the calls concurrently and
// commits each tool_result as it completes, so a crash never runs a
// completed call again. Denied, rejected and hook-blocked calls get a
// failed result without running.
//
// Every call's context carries a tool.CallInfo with the call's stable
// idempotency key and its attempt. Every goroutine it starts has returned
// when it returns. When the run is canceled while calls run, it waits for
// them and commits the results they came back with (a result, or a
// failure of their own), so that resuming does not run them again; calls
// that were canceled before they had an outcome run again on resume.
func CallTools(ctx context.Context, x *Exec, ins Instruction) error {
	a := x.agent
	info := x.info()
	// Models mostly call one tool at a time: a few jobs fit on the stack.
	var buf [4]toolJob
	jobs := buf[:0]
	var single *eventPair[session.ToolCall, session.ToolResult]
	// Questions hooks ask about calls; nothing is emitted until every
	// call's hooks have run, so that a malformed question fails the step
	// before any tool_call is announced.
	var asks []session.InputRequired
	for _, call := range ins.Calls {
		cs := x.st.call(call.ID)
		if cs == nil || cs.Done {
			continue
		}
		j := toolJob{call: cs.Call, attempt: cs.Attempts + 1}
		switch {
		case cs.Approval == CallRejected:
			j.block = "the user rejected this call"
			if cs.Reason != "" {
				j.block += ": " + cs.Reason
			}
		case cs.Approval != CallApproved && cs.Approval != CallRetry && a.approvalFor(call.Name) == tool.ApprovalDeny:
			j.block = "calls to " + call.Name + " are denied by policy"
		case cs.Approval == CallUndecided && a.approvalFor(call.Name) == tool.ApprovalAsk:
			if r := x.st.RuleFor(cs.Call); r != nil {
				j.rule = r.ID
				if r.Decision == session.DecisionReject {
					j.block = "rejected by a standing decision (" + r.ID + ")"
					if r.Reason != "" {
						j.block += ": " + r.Reason
					}
				}
			}
		}
		if j.block == "" && !x.hooks.empty() {
			d, asker, err := x.hooks.beforeTool(ctx, info, j.call, cs.Answers)
			if err != nil {
				return err
			}
			if d.Arguments != nil {
				j.call.Arguments = d.Arguments
			}
			switch {
			case d.Block:
				j.block = "blocked: " + d.Reason
			case d.Ask != nil && cs.Answers[asker] != nil:
				j.block = "blocked: a hook asked again about a call a person already answered"
			case d.Ask != nil:
				// Not run: it waits for a person (the policy sees it pending).
				q, err := hookQuestion(x, d.Ask, j.call, asker)
				if err != nil {
					return err
				}
				asks = append(asks, q)
				continue
			}
		}
		jobs = append(jobs, j)
	}
	for _, q := range asks {
		emit(x, q)
	}
	if x.deferCalls {
		if deferred, err := x.deferJobsOf(ctx, info, jobs); err != nil || deferred {
			return err
		}
	}
	for i := range jobs {
		j := &jobs[i]
		tc := session.ToolCall{CallID: j.call.ID, Name: j.call.Name, Arguments: j.call.Arguments, Rule: j.rule, Blocked: j.block}
		if j.attempt > 1 {
			tc.Attempt = j.attempt
		}
		if len(ins.Calls) == 1 {
			// The usual single call: its result's event comes with it.
			single = newPair[session.ToolCall, session.ToolResult](x, tc)
			x.add(&single.a.ev)
		} else {
			emit(x, tc)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	if err := x.Commit(ctx); err != nil {
		return err
	}
	// The calls are side effects: only the session's owner may make them.
	if err := x.lease.check(ctx); err != nil {
		return err
	}
	if len(jobs) == 1 && !x.isSubagentJob(jobs[0]) {
		start := x.stamp // the tool_call commit's clock reading, if any
		o := x.runTool(ctx, info, jobs[0])
		if o.canceled {
			return ctx.Err()
		}
		var t time.Time
		if !start.IsZero() && x.r.wallClock {
			// The call began just after the commit that announced it, so
			// the result's time is that reading plus the call's latency: a
			// clock reading fewer per call, and never before the tool_call's.
			t = start.Add(o.latency)
		}
		if single != nil {
			x.add(fill(x, single, o.res, t))
		} else {
			x.add(newEvent(x, o.res, t))
		}
		x.ranCall(o.res.CallID, o.attempt)
		if err := ctx.Err(); err != nil {
			// Canceled with the result in hand: store it before stopping.
			cctx, cancel := afterEnd(ctx)
			defer cancel()
			if cerr := x.Commit(cctx); cerr != nil {
				return cerr
			}
			return err
		}
		return nil
	}
	return x.runJobs(ctx, info, slices.Clone(jobs))
}

// deferJobsOf leaves the runnable calls of jobs to RunCall (see
// StepSessionCalls), answering the blocked ones now, and reports whether
// it did: not when none would run, nor for a batch that delegates to a
// tool of tool.Meta.Delegates or to a sub-agent's session that exists
// already (continued, or begun before a crash). A fresh delegation to a
// sub-agent is announced here, its child's turn begun (and let go of, for
// the engine to run), and left to RunCall to collect once that turn ends.
func (x *Exec) deferJobsOf(ctx context.Context, info HookInfo, jobs []toolJob) (bool, error) {
	runnable := 0
	for _, j := range jobs {
		if j.block != "" {
			continue
		}
		if x.isSubagentJob(j) && !x.freshDelegation(ctx, j) {
			return false, nil
		}
		runnable++
	}
	if runnable == 0 {
		return false, nil
	}
	b := &callBatch{info: info}
	for _, j := range jobs {
		tc := session.ToolCall{CallID: j.call.ID, Name: j.call.Name, Arguments: j.call.Arguments, Rule: j.rule, Blocked: j.block, Attempt: attemptOf(j)}
		switch {
		case j.block != "":
			emit(x, tc)
			o := x.runTool(ctx, info, j)
			emit(x, o.res)
		case x.isSubagentJob(j):
			target, _ := x.agent.subagentOf(j.call.Name)
			emit(x, tc)
			d, o, waiting, err := x.prepareDelegation(ctx, j, target)
			switch {
			case err != nil:
				return true, err
			case o != nil:
				emit(x, o.res)
			case !waiting:
				emit(x, d.started)
				b.add(j, d)
			}
		default:
			b.add(j, nil)
		}
	}
	if len(b.jobs) == 0 {
		return true, nil
	}
	if slices.ContainsFunc(b.dels, func(d *delegation) bool { return d != nil }) {
		// The children's turns begin once the parent has recorded their
		// start (as a run here begins them after subagent_started).
		if err := x.Commit(ctx); err != nil {
			return true, err
		}
		for i, d := range b.dels {
			if d == nil {
				continue
			}
			if b.child[i] = x.beginChild(ctx, d); b.child[i] == "" {
				b.state[i] = callDone // answered: it could not begin
			}
		}
	}
	x.deferred = b
	return true, nil
}

// freshDelegation reports whether j, a call of a sub-agent, delegates to
// a session of its own that does not exist yet: a new task.
func (x *Exec) freshDelegation(ctx context.Context, j toolJob) bool {
	if _, ok := x.agent.subagentOf(j.call.Name); !ok {
		return false // a tool that delegates
	}
	var in struct {
		Continue string `json:"continue_session"`
	}
	if json.Unmarshal(j.call.Arguments, &in) == nil && in.Continue != "" {
		return false
	}
	_, err := x.r.store.GetSession(ctx, x.st.SessionID+"."+shortRun(x.st.RunID)+"."+j.call.ID)
	return errors.Is(err, session.ErrNotFound)
}

// attemptOf is the attempt a tool_call records: none for the first.
func attemptOf(j toolJob) int {
	if j.attempt > 1 {
		return j.attempt
	}
	return 0
}

// isSubagentJob reports whether j delegates to a sub-agent, or to an
// agent outside the runtime (tool.Meta.Delegates): runJobs runs it, and
// records its reports while it runs.
func (x *Exec) isSubagentJob(j toolJob) bool {
	_, ok := x.agent.subagentOf(j.call.Name)
	return (ok || x.agent.delegates(j.call.Name)) && j.block == ""
}

// jobMsg is what a goroutine of runJobs reports: a tool's outcome (with
// its delegation, for a tool that delegates), a delegation's message, or
// a tool's delegation's report.
type jobMsg struct {
	tool *toolOutcome
	td   *toolDelegation
	del  delegationMsg
	rep  *toolReport
}

// runJobs runs jobs concurrently — tool calls and delegations to
// sub-agents alike — and records each outcome as it comes, committing it;
// see CallTools. Only the run's goroutine writes the log: the goroutines
// report to it. A delegation whose child waits for a person leaves its
// call without a result (its requests are the parent's). jobs is its own:
// the goroutines read it.
func (x *Exec) runJobs(ctx context.Context, info HookInfo, jobs []toolJob) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan jobMsg, 64)
	var (
		wg      sync.WaitGroup
		running int
		err     error
		acking  chan struct{} // the done of the delegation message being handled
	)
	defer func() {
		// A panic on this goroutine (a policy's state that cannot fold an
		// event, say) fails the step; the goroutines are canceled and
		// joined first — a child waiting for its progress to be recorded
		// would otherwise wait for ever, holding its session — and none
		// is left to read x once it goes back to the pool.
		v := recover()
		if v == nil {
			return
		}
		cancel()
		if acking != nil {
			close(acking)
		}
		for running > 0 {
			m := <-msgs
			if m.tool != nil || m.del.end != nil {
				running--
			}
			if m.del.done != nil {
				close(m.del.done)
			}
			if m.rep != nil {
				close(m.rep.done)
			}
		}
		wg.Wait()
		panic(v)
	}()
	// record stores one outcome: the results in hand are stored even
	// when the run was canceled meanwhile.
	record := func(o *toolOutcome) {
		if o == nil || o.canceled {
			return
		}
		if err != nil {
			if o.attempt > 0 && storeRefusal(err) {
				// A result in hand after the store refused a commit:
				// kept for a revival here (revive.go).
				x.holdResult(o.res, o.attempt)
			}
			return
		}
		emit(x, o.res)
		if o.attempt > 0 {
			x.ranCall(o.res.CallID, o.attempt)
		}
		cctx, ccancel := ctx, context.CancelFunc(func() {})
		if ctx.Err() != nil {
			cctx, ccancel = afterEnd(ctx)
		}
		cerr := x.Commit(cctx)
		ccancel()
		if cerr != nil {
			// The calls still running are canceled and awaited; the
			// results they bring are lost with the failed commit, and the
			// calls run again (or are confirmed) on resume.
			err = cerr
			cancel()
		}
	}
	for i := range jobs {
		j := jobs[i]
		if err != nil {
			break
		}
		if target, ok := x.agent.subagentOf(j.call.Name); ok && j.block == "" {
			d, o, waiting, perr := x.prepareDelegation(ctx, j, target)
			switch {
			case perr != nil:
				err = perr
				cancel()
				continue
			case waiting:
				continue
			case o != nil:
				record(o)
				continue
			}
			emit(x, d.started)
			if cerr := x.Commit(ctx); cerr != nil {
				err = cerr
				cancel()
				continue
			}
			running++
			cctx := x.childContext(tctx)
			wg.Go(func() { d.run(cctx, x.r, func(m delegationMsg) { msgs <- jobMsg{del: m} }) })
			continue
		}
		if x.agent.delegates(j.call.Name) && j.block == "" {
			td, derr := x.newToolDelegation(ctx, j)
			if derr != nil {
				err = derr
				cancel()
				continue
			}
			running++
			dctx := td.context(tctx, func(r *toolReport) { msgs <- jobMsg{rep: r} })
			wg.Go(func() {
				o := x.runTool(dctx, info, j)
				msgs <- jobMsg{tool: &o, td: td}
			})
			continue
		}
		running++
		wg.Go(func() {
			o := x.runTool(tctx, info, j)
			msgs <- jobMsg{tool: &o}
		})
	}
	for running > 0 {
		m := <-msgs
		if m.tool != nil {
			running--
			if m.td != nil && err == nil {
				x.endToolDelegation(m.td, m.tool)
			}
			record(m.tool)
			continue
		}
		if m.rep != nil {
			if err == nil {
				acking = m.rep.done
				rerr := x.onToolReport(ctx, m.rep)
				acking = nil
				if rerr != nil {
					err = rerr
					cancel()
				}
			}
			close(m.rep.done)
			continue
		}
		if m.del.end != nil {
			running--
		}
		if err != nil {
			if m.del.done != nil {
				close(m.del.done)
			}
			continue // every goroutine reports its end: drain
		}
		acking = m.del.done
		o, _, derr := x.onDelegationMsg(ctx, m.del)
		acking = nil
		if m.del.done != nil {
			close(m.del.done)
		}
		if derr != nil {
			err = derr
			cancel()
			continue
		}
		record(o)
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return ctx.Err()
}

// afterEnd returns a context for the commits a run makes after ctx ended.
func afterEnd(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
}

// toolJob is a call CallTools runs, or fails without running.
type toolJob struct {
	call    model.ToolCall
	attempt int
	rule    string // the standing decision that approved or rejected it
	block   string // non-empty: do not run, fail with this
}

// toolOutcome is what running a toolJob gave.
type toolOutcome struct {
	res     session.ToolResult
	latency time.Duration
	// canceled: the run's context ended before the call had an outcome of
	// its own; there is nothing to store.
	canceled bool
	// attempt is the attempt of the call that ran in this process (0 for
	// an outcome of another kind: a delegation's).
	attempt int
}

// runTool runs one job of CallTools. Several run concurrently: it reads
// only what does not change while they run (the agent, the hooks, info),
// never the state.
func (x *Exec) runTool(ctx context.Context, info HookInfo, j toolJob) toolOutcome {
	a := x.agent
	var res tool.Result
	switch {
	case j.block != "":
		res = tool.Result{Error: j.block}
	case len(j.call.Arguments) > 0 && j.call.Arguments[0] == '"':
		var raw string
		_ = json.Unmarshal(j.call.Arguments, &raw)
		res = tool.Result{Error: "the arguments were not valid JSON: " + preview(raw) + "; send a JSON object that matches the tool's input schema"}
	case a.Tools == nil:
		res = tool.Result{Error: "unknown tool " + strconv.Quote(j.call.Name) + ": this agent has no tools"}
	default:
		res = a.Tools.CallAs(ctx, tool.CallInfo{SessionID: info.SessionID, CallID: j.call.ID, Attempt: j.attempt},
			j.call.Name, j.call.Arguments)
		if !res.OK && ctx.Err() != nil && (errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, context.DeadlineExceeded)) {
			return toolOutcome{canceled: true}
		}
	}
	if !x.hooks.empty() {
		res = x.hooks.afterTool(ctx, info, j.call, res)
	}
	return toolOutcome{
		res: session.ToolResult{CallID: j.call.ID, Name: j.call.Name, OK: res.OK, Result: res.Output, Error: res.Error,
			LatencyMS: res.Latency.Milliseconds()},
		latency: res.Latency,
		attempt: j.attempt,
	}
}

func preview(s string) string {
	const n = 200
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// Finish is the built-in finish executor: the final answer ends the run.
//
// The agent-end hooks run first, with the answer.
func Finish(ctx context.Context, x *Exec, ins Instruction) error {
	if err := x.hooks.agentEnd(ctx, x.info(), session.StatusDone, ins.Text); err != nil {
		return err
	}
	x.rememberTurn(ctx, ins.Text)
	emit(x, session.Final{Text: ins.Text, Usage: x.st.RunUsage})
	x.End(session.StatusDone, "")
	return nil
}

// Pause is the built-in pause executor: the run stops, resumable. The
// agent-end hooks run first, with the reason.
func Pause(ctx context.Context, x *Exec, ins Instruction) error {
	if err := x.hooks.agentEnd(ctx, x.info(), session.StatusPaused, ins.Text); err != nil {
		return err
	}
	x.End(session.StatusPaused, ins.Text)
	return nil
}

// withMedia returns req with the bytes of the media m takes loaded from
// the store's blobs (model.MediaAcceptor); the others stay references,
// which the model's encoder describes. req itself, and the state's
// messages it shares, are not changed: the messages with media are
// copied.
func (x *Exec) withMedia(ctx context.Context, m model.Model, req *model.Request) (*model.Request, error) {
	if _, ok := m.(model.MediaAcceptor); !ok {
		return req, nil // it takes none: nothing to load, every call
	}
	var out *model.Request
	for i := range req.Messages {
		msg := &req.Messages[i]
		for j, p := range msg.Parts {
			if p.Media == nil || len(p.Media.Data) > 0 || !model.Accepts(m, p.Media.Type) {
				continue
			}
			bs, ok := x.r.store.(session.Blobs)
			if !ok {
				return nil, &Error{Kind: FailStore, Msg: "the store keeps no blobs for the media of the conversation"}
			}
			_, data, err := bs.GetBlob(ctx, p.Media.Hash)
			if err != nil {
				return nil, &Error{Kind: FailStore, Msg: "read blob " + p.Media.Hash + " of the conversation", Err: err}
			}
			if out == nil {
				c := *req
				c.Messages = slices.Clone(req.Messages)
				out = &c
			}
			om := &out.Messages[i]
			if &om.Parts[0] == &msg.Parts[0] {
				om.Parts = slices.Clone(msg.Parts)
			}
			media := *p.Media
			media.Data = data
			om.Parts[j].Media = &media
		}
	}
	if out == nil {
		return req, nil
	}
	return out, nil
}
