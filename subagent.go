package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// Runner (seed 002's delegation): a call runs that agent in a child
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

// runSubagent runs a sub-agent call on the run's goroutine: the child's
// turn (or its resumption), the parent's subagent_* events, and the
// call's outcome. waiting is set when the child waits for a person: the
// parent then records the child's requests as its own and has no result
// for the call yet. An error stops the parent (its store failed, or the
// run was canceled).
func (x *Exec) runSubagent(ctx context.Context, j toolJob, target string) (o toolOutcome, waiting bool, err error) {
	r := x.r
	failed := func(msg string) (toolOutcome, bool, error) {
		return toolOutcome{res: session.ToolResult{CallID: j.call.ID, Name: j.call.Name, Error: msg}}, false, nil
	}
	max := r.maxDepth
	if depth := subagentDepth(ctx) + 1; depth > max {
		return failed(fmt.Sprintf("not delegated: %s is %d delegations deep, and the limit is %d", target, depth, max))
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
		case err != nil && AsError(err).Code == "not_found":
			return failed(fmt.Sprintf("there is no delegation %q to continue", in.Continue))
		case err != nil:
			return toolOutcome{}, false, err
		case st.Parent == nil || st.Parent.SessionID != x.st.SessionID || st.Agent != target:
			return failed(fmt.Sprintf("%q is not a delegation of this session to %s", in.Continue, target))
		}
		childID = in.Continue
	}
	cctx := context.WithValue(ctx, depthKey{}, subagentDepth(ctx)+1)

	child, gerr := r.store.GetSession(ctx, childID)
	var events func(yield func(*session.Event, error) bool)
	started := session.SubagentStarted{CallID: j.call.ID, Agent: target, ChildSession: childID, Task: in.Task}
	switch {
	case errors.Is(gerr, session.ErrNotFound) && in.Continue != "":
		return failed(fmt.Sprintf("there is no delegation %q to continue", in.Continue))
	case errors.Is(gerr, session.ErrNotFound):
		events = r.Run(cctx, childID, Input{Text: in.Task, Agent: target,
			Parent: &session.ParentRef{SessionID: x.st.SessionID, CallID: j.call.ID}})
	case gerr != nil:
		return toolOutcome{}, false, &Error{Kind: FailStore, Msg: "the sub-agent's session", Err: gerr}
	case child.Status == session.StatusDone && in.Continue == "":
		// It answered before the parent could record it (a crash).
		st, err := r.Load(ctx, childID)
		if err != nil {
			return toolOutcome{}, false, err
		}
		return x.subagentDone(j, childID, st.Final, st.RunUsage), false, nil
	case child.Status == session.StatusWaiting:
		st, err := r.Load(ctx, childID)
		if err != nil {
			return toolOutcome{}, false, err
		}
		if len(st.Requests) > 0 {
			x.surfaceChildRequests(j, target, childID, st.Requests)
			return toolOutcome{}, true, nil
		}
		started.Resumed = true
		events = r.Resume(cctx, childID)
	case child.Status == session.StatusPaused && in.Continue == "":
		// It paused at a limit before the parent could record it (a
		// crash): report the pause rather than grant it its limits again.
		st, err := r.Load(ctx, childID)
		if err != nil {
			return toolOutcome{}, false, err
		}
		reason := ""
		if st.LastError != nil {
			reason = st.LastError.Code
		}
		return x.subagentPaused(j, target, in.Task, childID, cmp.Or(reason, "max_rounds"), st.RunUsage), false, nil
	default:
		started.Resumed = true
		events = r.Resume(cctx, childID)
	}
	emit(x, started)
	if err := x.Commit(ctx); err != nil {
		return toolOutcome{}, false, err
	}

	var (
		status   session.Status
		reason   string
		final    string
		usage    model.Usage
		lastErr  *session.Error
		lastPing time.Time
		runErr   error
	)
	for ev, err := range events {
		if err != nil {
			runErr = err
			break
		}
		switch d := ev.Data.(type) {
		case *session.RoundStarted:
			if now := x.now(); lastPing.IsZero() || now.Sub(lastPing) >= subagentProgressEvery {
				lastPing = now
				emit(x, session.SubagentProgress{CallID: j.call.ID, ChildSession: childID, Round: d.Round})
			}
			if d.Round%subagentCheckpoint == 0 {
				emit(x, session.SubagentCheckpoint{CallID: j.call.ID, ChildSession: childID, Round: d.Round})
			}
			if len(x.pending) > 0 {
				if err := x.Commit(ctx); err != nil {
					return toolOutcome{}, false, err
				}
			}
		case *session.Final:
			final = d.Text
		case *session.Error:
			lastErr = d
		case *session.RunFinished:
			status, reason, usage = d.Status, d.Reason, d.Usage
		}
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return toolOutcome{canceled: true}, false, nil
		}
		if re := AsError(runErr); re.Kind == FailStore || re.Code == "lease_lost" || re.Code == "lease_expired" {
			return toolOutcome{}, false, runErr // the parent stops too; a resume goes on
		}
		emit(x, session.SubagentError{CallID: j.call.ID, ChildSession: childID, Code: AsError(runErr).ErrorCode(), Message: runErr.Error()})
		return failed(fmt.Sprintf("the sub-agent %s could not run: %v", target, runErr))
	}
	switch status {
	case session.StatusDone:
		return x.subagentDone(j, childID, final, usage), false, nil
	case session.StatusWaiting:
		st, err := r.Load(ctx, childID)
		if err != nil {
			return toolOutcome{}, false, err
		}
		x.surfaceChildRequests(j, target, childID, st.Requests)
		return toolOutcome{}, true, nil
	case session.StatusPaused:
		return x.subagentPaused(j, target, in.Task, childID, reason, usage), false, nil
	case session.StatusCanceled:
		if ctx.Err() != nil {
			return toolOutcome{canceled: true}, false, nil
		}
	}
	code, msg := "failed", "the sub-agent "+target+" failed"
	if lastErr != nil {
		code, msg = lastErr.Code, msg+": "+lastErr.Message
	}
	emit(x, session.SubagentError{CallID: j.call.ID, ChildSession: childID, Code: code, Message: msg, Usage: usage})
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
		})
	}
}
