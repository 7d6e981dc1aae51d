package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// DefaultMaxSubagentDepth is Config.MaxSubagentDepth when it is zero.
const DefaultMaxSubagentDepth = 3

// Sub-agent progress: a subagent_progress event at most every
// subagentProgressEvery, a subagent_checkpoint every subagentCheckpoint
// rounds of the child.
const (
	subagentProgressEvery = time.Second
	subagentCheckpoint    = 8
)

// SubAgent returns a tool that delegates to the named agent of the same
// Runner: a call runs that agent in a child
// session of its own, linked to the caller's session and call, and its
// result is the child's final answer. The parent's log shows the
// delegation (subagent_started, subagent_progress, subagent_checkpoint,
// subagent_paused, subagent_finished, subagent_error), the child's usage
// counts in the parent's, and cancellation flows down. A child that waits
// for a person makes the parent wait: its request shows as the parent's,
// and answering it there answers it in the child. A parent resumed after
// a crash resumes its child where it was. description "" says what the
// tool does in general words.
//
// Its input is {"task": "…"}; a child that paused at a limit is continued
// with {"task": "…", "continue_session": "<its session>"}.
func SubAgent(agent, description string) tool.Tool {
	if description == "" {
		description = "Delegate a task to the agent " + agent + ": it works on it with its own tools and answers."
	}
	return subagentTool{agent: agent, desc: description}
}

type subagentTool struct{ agent, desc string }

const subagentSchema = `{"type":"object","properties":{` +
	`"task":{"type":"string","description":"what the agent should do, with everything it needs to know"},` +
	`"continue_session":{"type":"string","description":"the session of a delegation that paused, to let it go on"}},` +
	`"required":["task"]}`

func (t subagentTool) Definition() tool.Definition {
	return tool.Definition{Name: t.agent, Description: t.desc, InputSchema: json.RawMessage(subagentSchema)}
}

func (t subagentTool) Call(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("the sub-agent %q runs only inside an agentrt.Runner", t.agent)
}

// subagentOf returns the agent a tool of a delegates to, if it is a
// sub-agent tool.
func (a *Agent) subagentOf(name string) (string, bool) {
	t := a.tool(name)
	if t == nil {
		return "", false
	}
	st, ok := t.(subagentTool)
	return st.agent, ok
}

// subagentTargets returns the agents a delegates to.
func (a *Agent) subagentTargets() []string {
	if a.Tools == nil {
		return nil
	}
	var out []string
	for _, n := range a.Tools.Names() {
		if target, ok := a.subagentOf(n); ok {
			out = append(out, target)
		}
	}
	return out
}

// checkSubagents refuses sub-agent tools that name no agent, and agents
// that delegate in a cycle.
func checkSubagents(agents map[string]*Agent) error {
	for _, a := range agents {
		for _, t := range a.subagentTargets() {
			if _, ok := agents[t]; !ok {
				return fmt.Errorf("agent %q: sub-agent %q is not an agent of this runner", a.Name, t)
			}
		}
	}
	// Depth-first, in name order for a stable message.
	state := map[string]int{} // 1 visiting, 2 done
	var path []string
	var visit func(n string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			i := 0
			for path[i] != n {
				i++
			}
			return fmt.Errorf("agents delegate to each other in a cycle: %s → %s", strings.Join(path[i:], " → "), n)
		case 2:
			return nil
		}
		state[n] = 1
		path = append(path, n)
		for _, t := range agents[n].subagentTargets() {
			if err := visit(t); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
		return nil
	}
	for _, n := range sortedKeys(agents) {
		if err := visit(n); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// depthKey carries the delegation depth of a run's context.
type depthKey struct{}

func subagentDepth(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

// A delegation is a sub-agent call on its way: the child session it runs
// in, and how its run begins. It runs on a goroutine of its own (several
// of one reply run at once), reporting to the parent's run goroutine,
// which alone writes the parent's log.
type delegation struct {
	job     toolJob
	target  string
	task    string
	childID string
	started session.SubagentStarted
	// begin starts (or goes on with) the child's run.
	begin func(ctx context.Context) iter.Seq2[*session.Event, error]

	lastPing time.Time // the last subagent_progress; the run goroutine's
}

// childEnd is how a delegation's child run ended, as its session stores
// it: Status and Reason of its run_finished, its answer, usage and last
// error, or runErr when the run could not go on (the store failed, the
// parent's run was canceled).
type childEnd struct {
	status  session.Status
	reason  string
	final   string
	usage   model.Usage
	lastErr *session.Error
	runErr  error
}

// delegationMsg is a delegation's report to the run goroutine: a child's
// round (progress), one of its events to show live, or its end.
type delegationMsg struct {
	d     *delegation
	round int            // a round began
	live  *session.Event // an event of the child's run
	end   *childEnd      // the child's run ended (last message)
	// done, for a round, is closed once the parent recorded it: the
	// child's round goes on only then, so that the parent's log shows
	// its progress in step with the child's.
	done chan struct{}
}

// prepareDelegation checks a sub-agent call and finds its child session:
// a delegation to run, or at once the call's outcome (bad arguments, too
// deep, a child that answered or paused before a crash, one waiting for a
// person: waiting). It runs on the run's goroutine.
func (x *Exec) prepareDelegation(ctx context.Context, j toolJob, target string) (d *delegation, o *toolOutcome, waiting bool, err error) {
	r := x.r
	failed := func(msg string) (*delegation, *toolOutcome, bool, error) {
		return nil, &toolOutcome{res: session.ToolResult{CallID: j.call.ID, Name: j.call.Name, Error: msg}}, false, nil
	}
	if depth := subagentDepth(ctx) + 1; depth > r.maxDepth {
		return failed(fmt.Sprintf("not delegated: %s is %d delegations deep, and the limit is %d", target, depth, r.maxDepth))
	}
	var in struct {
		Task     string `json:"task"`
		Continue string `json:"continue_session"`
	}
	if err := json.Unmarshal(j.call.Arguments, &in); err != nil || strings.TrimSpace(in.Task) == "" && in.Continue == "" {
		return failed(`the arguments must be {"task": "…"}, the task saying what to do`)
	}
	// The child's session is named after the run and the call: stable
	// across a crash and a resume of this run, new in every turn (a model
	// may use the same call id twice).
	childID := x.st.SessionID + "." + shortRun(x.st.RunID) + "." + j.call.ID
	if in.Continue != "" {
		st, err := r.Load(ctx, in.Continue)
		switch {
		case err != nil && AsError(err).Code == CodeNotFound:
			return failed(fmt.Sprintf("there is no delegation %q to continue", in.Continue))
		case err != nil:
			return nil, nil, false, err
		case st.Parent == nil || st.Parent.SessionID != x.st.SessionID || st.Agent != target:
			return failed(fmt.Sprintf("%q is not a delegation of this session to %s", in.Continue, target))
		}
		childID = in.Continue
	}
	d = &delegation{job: j, target: target, task: in.Task, childID: childID,
		started: session.SubagentStarted{CallID: j.call.ID, Agent: target, ChildSession: childID, Task: in.Task}}
	parent := &session.ParentRef{SessionID: x.st.SessionID, CallID: j.call.ID}
	run := func(ctx context.Context) iter.Seq2[*session.Event, error] {
		return r.Run(ctx, childID, Input{Text: in.Task, Agent: target, Parent: parent})
	}
	resume := func(ctx context.Context) iter.Seq2[*session.Event, error] { return r.Resume(ctx, childID) }

	child, gerr := r.store.GetSession(ctx, childID)
	switch {
	case errors.Is(gerr, session.ErrNotFound) && in.Continue != "":
		return failed(fmt.Sprintf("there is no delegation %q to continue", in.Continue))
	case errors.Is(gerr, session.ErrNotFound):
		d.begin = run
	case gerr != nil:
		return nil, nil, false, &Error{Kind: FailStore, Msg: "the sub-agent's session", Err: gerr}
	case child.Status == session.StatusIdle && child.LastSeq == 0:
		// Created, and its first commit never made (it failed, or the
		// process died first): its turn starts now.
		d.begin = run
	case child.Status == session.StatusDone && in.Continue == "":
		// It answered before the parent could record it (a crash).
		st, err := r.Load(ctx, childID)
		if err != nil {
			return nil, nil, false, err
		}
		out := x.subagentDone(j, childID, st.Final, st.RunUsage)
		return nil, &out, false, nil
	case child.Status == session.StatusWaiting:
		st, err := r.Load(ctx, childID)
		if err != nil {
			return nil, nil, false, err
		}
		if len(st.Requests) > 0 {
			x.surfaceChildRequests(j, target, childID, st.Requests)
			return nil, nil, true, nil
		}
		d.started.Resumed, d.begin = true, resume
	case child.Status == session.StatusPaused && in.Continue == "":
		// It paused at a limit before the parent could record it (a
		// crash): report the pause rather than grant it its limits again.
		st, err := r.Load(ctx, childID)
		if err != nil {
			return nil, nil, false, err
		}
		reason := ""
		if st.LastError != nil {
			reason = st.LastError.Code
		}
		out := x.subagentPaused(j, target, in.Task, childID, cmp.Or(reason, "max_rounds"), st.RunUsage)
		return nil, &out, false, nil
	default:
		d.started.Resumed, d.begin = true, resume
	}
	return d, nil, false, nil
}

// childContext is the context of a delegation's child run: one level
// deeper, and working for the parent's run (an interruption flows down).
func (x *Exec) childContext(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, depthKey{}, subagentDepth(ctx)+1)
	if x.handle != nil {
		ctx = context.WithValue(ctx, parentRunKey{}, x.handle)
	}
	return ctx
}

// run runs the delegation's child on the calling goroutine (one of its
// own) and reports to send, the end last. A child another run is running
// already — in this process, or another — is not run twice: the
// delegation attaches to that run, waits for its end, and takes the child
// from where it stopped.
func (d *delegation) run(ctx context.Context, r *Runner, send func(delegationMsg)) {
	events := d.begin(ctx)
	for {
		end := d.follow(events, send)
		if end.runErr == nil || ctx.Err() != nil {
			send(delegationMsg{d: d, end: &end})
			return
		}
		switch AsError(end.runErr).Code {
		case CodeBusy, CodeLeaseHeld:
			// Another run has it: wait for that run, then look again.
		case CodeNothingToResume, CodeWaiting, CodeUnfinishedRun:
			// It changed between the look and the start (another run
			// ended it, or made it wait): look again.
		default:
			send(delegationMsg{d: d, end: &end})
			return
		}
		if err := r.awaitRun(ctx, d.childID); err != nil {
			send(delegationMsg{d: d, end: &childEnd{runErr: err}})
			return
		}
		sess, err := r.store.GetSession(ctx, d.childID)
		if err != nil {
			send(delegationMsg{d: d, end: &childEnd{runErr: notFound(d.childID, err)}})
			return
		}
		switch sess.Status {
		case session.StatusRunning, session.StatusFailed, session.StatusCanceled, session.StatusInterrupted:
			// Its run stopped with its process, or ended badly: it goes on
			// here.
			events = r.Resume(ctx, d.childID)
			continue
		case session.StatusIdle:
			events = d.begin(ctx)
			continue
		}
		// Done, paused or waiting: its end, as stored.
		st, err := r.Load(ctx, d.childID)
		if err != nil {
			send(delegationMsg{d: d, end: &childEnd{runErr: err}})
			return
		}
		reason := ""
		if st.LastError != nil {
			reason = st.LastError.Code
		}
		send(delegationMsg{d: d, end: &childEnd{status: st.Status, reason: reason, final: st.Final, usage: st.RunUsage, lastErr: st.LastError}})
		return
	}
}

// follow reads a child run's events: each is reported live, a round's
// start as progress; it returns how the run ended.
func (d *delegation) follow(events iter.Seq2[*session.Event, error], send func(delegationMsg)) childEnd {
	var end childEnd
	for ev, err := range events {
		if err != nil {
			end.runErr = err
			break
		}
		send(delegationMsg{d: d, live: ev})
		switch e := ev.Data.(type) {
		case *session.RoundStarted:
			done := make(chan struct{})
			send(delegationMsg{d: d, round: e.Round, done: done})
			<-done
		case *session.Final:
			end.final = e.Text
		case *session.Error:
			end.lastErr = e
		case *session.RunFinished:
			end.status, end.reason, end.usage = e.Status, e.Reason, e.Usage
		}
	}
	return end
}

// awaitRun waits until no run of session id is in progress: one of this
// runner (its end), or of another process (its run_finished, or its lease
// let go of or expired).
func (r *Runner) awaitRun(ctx context.Context, id string) error {
	if h := r.reg.run(keyOf(ctx, id)); h != nil {
		select {
		case <-h.Done():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sess, err := r.store.GetSession(ctx, id)
	if err != nil {
		return notFound(id, err)
	}
	if l := sess.Lease; l != nil && time.Now().Before(l.Expires) { // the store's clock

		return r.awaitOwner(ctx, id, sess.LastSeq, *l)
	}
	return nil
}

// onDelegationMsg handles a delegation's report on the run's goroutine:
// progress into the parent's log (throttled), the child's events to the
// parent's live watchers; the end, as the call's outcome. waiting is set
// when the child waits for a person (its requests are now the parent's).
func (x *Exec) onDelegationMsg(ctx context.Context, m delegationMsg) (o *toolOutcome, waiting bool, err error) {
	d := m.d
	switch {
	case m.live != nil:
		if x.wantsLive() {
			x.yieldLive(newEvent(x, session.SubagentEvent{CallID: d.job.call.ID, ChildSession: d.childID, Event: m.live}, x.now()))
		}
		return nil, false, nil
	case m.end == nil:
		if now := x.now(); d.lastPing.IsZero() || now.Sub(d.lastPing) >= subagentProgressEvery {
			d.lastPing = now
			emit(x, session.SubagentProgress{CallID: d.job.call.ID, ChildSession: d.childID, Round: m.round})
		}
		if m.round%subagentCheckpoint == 0 {
			emit(x, session.SubagentCheckpoint{CallID: d.job.call.ID, ChildSession: d.childID, Round: m.round})
		}
		if len(x.pending) > 0 {
			return nil, false, x.Commit(ctx)
		}
		return nil, false, nil
	}
	return x.delegationOutcome(ctx, d, *m.end)
}

// delegationOutcome turns the end of a delegation's child run into the
// call's outcome, with the parent's subagent_* event.
func (x *Exec) delegationOutcome(ctx context.Context, d *delegation, end childEnd) (*toolOutcome, bool, error) {
	j, target, childID := d.job, d.target, d.childID
	failed := func(msg string) (*toolOutcome, bool, error) {
		return &toolOutcome{res: session.ToolResult{CallID: j.call.ID, Name: j.call.Name, Error: msg}}, false, nil
	}
	if end.runErr != nil {
		if ctx.Err() != nil {
			return &toolOutcome{canceled: true}, false, nil
		}
		if re := AsError(end.runErr); re.Kind == FailStore || re.Code == CodeLeaseLost || re.Code == CodeLeaseExpired {
			return nil, false, end.runErr // the parent stops too; a resume goes on
		}
		emit(x, session.SubagentError{CallID: j.call.ID, ChildSession: childID, Code: AsError(end.runErr).ErrorCode(), Message: end.runErr.Error()})
		return failed(fmt.Sprintf("the sub-agent %s could not run: %v", target, end.runErr))
	}
	switch end.status {
	case session.StatusDone:
		o := x.subagentDone(j, childID, end.final, end.usage)
		return &o, false, nil
	case session.StatusWaiting:
		st, err := x.r.Load(ctx, childID)
		if err != nil {
			return nil, false, err
		}
		x.surfaceChildRequests(j, target, childID, st.Requests)
		return nil, true, nil
	case session.StatusPaused:
		o := x.subagentPaused(j, target, d.task, childID, end.reason, end.usage)
		return &o, false, nil
	case session.StatusCanceled:
		if ctx.Err() != nil {
			return &toolOutcome{canceled: true}, false, nil
		}
	case session.StatusInterrupted:
		emit(x, session.SubagentError{CallID: j.call.ID, ChildSession: childID, Code: CodeInterrupted,
			Message: "the sub-agent was interrupted (" + end.reason + ")", Usage: end.usage})
		return failed(fmt.Sprintf("the sub-agent %s was interrupted (%s) before it answered", target, end.reason))
	}
	code, msg := CodeSubagentFailed, "the sub-agent "+target+" failed"
	if end.lastErr != nil {
		code, msg = end.lastErr.Code, msg+": "+end.lastErr.Message
	}
	emit(x, session.SubagentError{CallID: j.call.ID, ChildSession: childID, Code: code, Message: msg, Usage: end.usage})
	return failed(msg)
}

// subagentPaused records a child that stopped at a limit and returns the
// call's result, which says how to let it go on.
func (x *Exec) subagentPaused(j toolJob, target, task, childID, reason string, usage model.Usage) toolOutcome {
	emit(x, session.SubagentPaused{CallID: j.call.ID, ChildSession: childID, Reason: reason, Usage: usage})
	return toolOutcome{res: session.ToolResult{CallID: j.call.ID, Name: j.call.Name, Error: fmt.Sprintf(
		`the sub-agent %s paused (%s) before it answered; to let it go on, call %s again with {"task": %q, "continue_session": %q}`,
		target, reason, target, task, childID)}}
}

// shortRun is the part of a run id a child session's name carries.
func shortRun(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// subagentDone records a child's answer and returns the call's result.
func (x *Exec) subagentDone(j toolJob, childID, answer string, usage model.Usage) toolOutcome {
	emit(x, session.SubagentFinished{CallID: j.call.ID, ChildSession: childID, Answer: answer, Usage: usage})
	out, _ := json.Marshal(struct {
		Answer  string `json:"answer"`
		Session string `json:"session"`
	}{answer, childID})
	return toolOutcome{res: session.ToolResult{CallID: j.call.ID, Name: j.call.Name, OK: true, Result: out}}
}

// surfaceChildRequests makes the child's pending requests the parent's:
// each an input_required about the delegating call, answered through the
// parent (Runner.Resolve forwards it).
func (x *Exec) surfaceChildRequests(j toolJob, target, childID string, reqs []HumanRequest) {
	for _, q := range reqs {
		if x.st.Pending(childID+":"+q.ID) != nil {
			continue
		}
		emit(x, session.InputRequired{
			RequestID: childID + ":" + q.ID,
			Kind:      q.Kind,
			Question:  "[" + target + "] " + q.Question,
			Options:   q.Options,
			Multi:     q.Multi,
			Calls:     []model.ToolCall{j.call},
			Expires:   q.Expires,
			Child:     &session.ChildRequest{SessionID: childID, RequestID: q.ID},
			Metadata:  q.Metadata,
		})
	}
}
