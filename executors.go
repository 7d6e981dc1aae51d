package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	case KindRequestApproval:
		return RequestApproval
	case KindFinish:
		return Finish
	case KindPause:
		return Pause
	}
	return nil
}

// CallModel is the built-in call_model executor: one model call with the
// sanitised history and the agent's tools, streamed as token events,
// recorded as model_finished. A failed call is retried and then handed to
// the agent's fallback models as its RetryPolicy says; each attempt has its
// model_started event, and each failure its error event.
func CallModel(ctx context.Context, x *Exec, _ Instruction) error {
	st, a := x.st, x.agent
	attempt := 1
	if st.InModel {
		// The process stopped during this call; this is a new attempt.
		attempt = st.Attempt + 1
	} else {
		emit(x, session.RoundStarted{Round: st.Round + 1, MaxRounds: st.RoundBase + a.Limits.maxRounds()})
	}
	emit(x, session.ModelStarted{Model: a.Model.Name(), Attempt: attempt})
	if err := x.Commit(ctx); err != nil {
		return err
	}
	req, err := x.hooks.beforeModel(ctx, x.info(), x.request())
	if err != nil {
		return err
	}
	// The call starts now: model_started was stamped just above, so its
	// commit's clock reading serves (one reading fewer per model call).
	start := x.stamp
	if start.IsZero() {
		start = x.now()
	}
	m := a.Model
	resp, err := x.callModel(ctx, m, req, false)
	if err != nil {
		if m, resp, start, err = x.retryModel(ctx, req, attempt, err); err != nil {
			return err
		}
	}
	if resp, err = x.hooks.afterModel(ctx, x.info(), resp); err != nil {
		return err
	}
	calls := normalizeCalls(resp.Message.ToolCalls, st.Seq+1, resp.FinishReason)
	end := x.now() // the event's time, and the end of the call's latency
	x.add(newEvent(x, session.ModelFinished{
		Model:        m.Name(),
		Content:      resp.Message.Text(),
		ToolCalls:    calls,
		Usage:        resp.Usage,
		FinishReason: resp.FinishReason,
		LatencyMS:    end.Sub(start).Milliseconds(),
	}, end))
	return nil
}

// callModel makes one attempt at a model call: streamed, or with Generate.
func (x *Exec) callModel(ctx context.Context, m model.Model, req *model.Request, generate bool) (*model.Response, error) {
	if generate {
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
func (x *Exec) retryModel(ctx context.Context, req *model.Request, attempt int, err error) (model.Model, *model.Response, time.Time, error) {
	a := x.agent
	models := append([]model.Model{a.Model}, a.Fallbacks...)
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
		_, canGenerate := m.(model.Generator)
		switch {
		case classified && me.Streamed && me.Recoverable() && canGenerate && !generated:
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
		mode := ""
		if generate {
			mode = "generate"
		}
		emit(x, session.ModelStarted{Model: m.Name(), Attempt: attempt, Mode: mode})
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
		return &Error{Kind: FailCanceled, Code: "canceled", Msg: "the caller stopped reading events"}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if me, ok := model.AsError(err); ok {
		r := me.Recoverable()
		return &Error{Kind: FailModel, Code: string(me.Code), Err: err, Recoverable: &r}
	}
	return &Error{Kind: FailModel, Code: "model_error", Msg: "model " + m.Name(), Err: err}
}

// stream streams m's reply to req into x.asm, yielding its text as token
// events and its pulses as pulse tokens.
func (x *Exec) stream(ctx context.Context, m model.Model, req *model.Request) error {
	// The loop body only breaks, never returns, and keeps its error in x:
	// a return from the body of a range over a function, or a local it
	// assigns, would live on the heap, an allocation per model call each.
	x.streamErr = nil
	x.asm.Reset()
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

// normalizeCalls drops calls without a usable name (seed 002: empty or
// "None"), gives calls without an id a deterministic one, and keeps
// arguments that are not valid JSON as a JSON string so the log stays
// valid JSON and the tool step can tell the model what was wrong.
func normalizeCalls(calls []model.ToolCall, seq int64, finish model.FinishReason) []model.ToolCall {
	out := calls[:0]
	for i, c := range calls {
		name := strings.TrimSpace(c.Name)
		if name == "" || strings.EqualFold(name, "none") || strings.EqualFold(name, "null") {
			continue
		}
		c.Name = name
		if c.ID == "" {
			c.ID = "call_" + strconv.FormatInt(seq, 10) + "_" + strconv.Itoa(i)
		}
		if !model.ValidJSON(c.Arguments) {
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
		return nil
	}
	return out
}

// request builds the model request from the state, reusing buffers.
func (x *Exec) request() *model.Request {
	msgs := x.st.Messages
	switch {
	case x.hooks.rewritesRequests():
		// A before-model hook may change the request: it gets a copy of
		// the history, never the state's own.
		x.msgs = AppendSanitized(x.msgs[:0], x.st.Messages)
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
	x.req = model.Request{System: x.agent.SystemPrompt, Messages: msgs[:len(msgs):len(msgs)], Tools: x.agent.specs}
	return &x.req
}

// CallTools is the built-in call_tools executor. It announces each call
// (tool_call, committed before any runs), runs the calls concurrently and
// commits each tool_result as it completes, so a crash never runs a
// completed call again. Denied, rejected and hook-blocked calls get a
// failed result without running.
func CallTools(ctx context.Context, x *Exec, ins Instruction) error {
	a := x.agent
	// Models mostly call one tool at a time: a few jobs fit on the stack.
	var buf [4]toolJob
	jobs := buf[:0]
	for _, call := range ins.Calls {
		cs := x.st.call(call.ID)
		if cs == nil || cs.Done {
			continue
		}
		j := toolJob{call: cs.Call}
		switch {
		case cs.Approval == CallRejected:
			j.block = "the user rejected this call"
			if cs.Reason != "" {
				j.block += ": " + cs.Reason
			}
		case cs.Approval != CallApproved && a.approvalFor(call.Name) == tool.ApprovalDeny:
			j.block = "calls to " + call.Name + " are denied by policy"
		}
		if j.block == "" && !x.hooks.empty() {
			d := x.hooks.beforeTool(ctx, x.info(), j.call)
			if d.Arguments != nil {
				j.call.Arguments = d.Arguments
			}
			if d.Block {
				j.block = "blocked: " + d.Reason
			}
		}
		if !cs.Started {
			emit(x, session.ToolCall{CallID: j.call.ID, Name: j.call.Name, Arguments: j.call.Arguments})
		}
		jobs = append(jobs, j)
	}
	if err := x.Commit(ctx); err != nil {
		return err
	}
	if len(jobs) == 1 {
		start := x.stamp // the tool_call commit's clock reading, if any
		r, latency := x.runTool(ctx, jobs[0])
		if err := ctx.Err(); err != nil {
			return err
		}
		if start.IsZero() || !x.r.wallClock {
			emit(x, r)
			return nil
		}
		// The call began just after the commit that announced it, so the
		// result's time is that reading plus the call's latency: a clock
		// reading fewer per call, and never before the tool_call's time.
		x.add(newEvent(x, r, start.Add(latency)))
		return nil
	}
	results := make(chan session.ToolResult, len(jobs))
	for _, j := range jobs {
		go func() {
			r, _ := x.runTool(ctx, j)
			results <- r
		}()
	}
	for range jobs {
		r := <-results
		if ctx.Err() != nil {
			continue // drain: every goroutine sends exactly once
		}
		emit(x, r)
		if err := x.Commit(ctx); err != nil {
			// The remaining calls finish into the buffered channel; their
			// results are lost with the failed store and run again on resume.
			return err
		}
	}
	return ctx.Err()
}

// toolJob is a call CallTools runs, or fails without running.
type toolJob struct {
	call  model.ToolCall
	block string // non-empty: do not run, fail with this
}

// runTool runs one job of CallTools. Several run concurrently: it reads
// only what the executor's goroutine does not change meanwhile.
func (x *Exec) runTool(ctx context.Context, j toolJob) (session.ToolResult, time.Duration) {
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
		res = a.Tools.Call(ctx, j.call.Name, j.call.Arguments)
	}
	if !x.hooks.empty() {
		res = x.hooks.afterTool(ctx, x.info(), j.call, res)
	}
	return session.ToolResult{CallID: j.call.ID, Name: j.call.Name, OK: res.OK, Result: res.Output, Error: res.Error, LatencyMS: res.Latency.Milliseconds()}, res.Latency
}

func preview(s string) string {
	const n = 200
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// RequestApproval is the built-in request_approval executor: one
// approval_required event per call, then the run waits.
func RequestApproval(_ context.Context, x *Exec, ins Instruction) error {
	for _, c := range ins.Calls {
		emit(x, session.ApprovalRequired{
			RequestID: "req_" + x.r.newID(),
			Calls:     []model.ToolCall{c},
			Question:  fmt.Sprintf("Allow %s with arguments %s?", c.Name, string(c.Arguments)),
		})
	}
	x.End(session.StatusWaiting, "approval")
	return nil
}

// Finish is the built-in finish executor: the final answer ends the run.
func Finish(_ context.Context, x *Exec, ins Instruction) error {
	emit(x, session.Final{Text: ins.Text, Usage: x.st.RunUsage})
	x.End(session.StatusDone, "")
	return nil
}

// Pause is the built-in pause executor: the run stops, resumable.
func Pause(_ context.Context, x *Exec, ins Instruction) error {
	x.End(session.StatusPaused, ins.Text)
	return nil
}
