package agentrt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Plan-and-execute: a plan of steps, written by the model or given by the
// caller, executed one step after another.

// StepKind is what a plan step does.
type StepKind string

// Step kinds.
const (
	// StepTool calls a tool with arguments.
	StepTool StepKind = "tool"
	// StepReply is the answer, as written in the plan: it ends the plan
	// (the steps after it are skipped) and no summary is written.
	StepReply StepKind = "reply"
	// StepTask is a task the think-act loop carries out with the agent's
	// tools: the model is given it, calls tools as it needs, and its
	// answer is the step's observation.
	StepTask StepKind = "task"
)

// Step statuses (plan_step_finished's status).
const (
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// A PlanStep is one step of a Plan.
//
// As JSON a step is {"kind": "tool", "tool": NAME, "arguments": {…}},
// {"kind": "task", "task": …} or {"kind": "reply", "text": …}; "type" is
// accepted for "kind" and "name" for "tool", as planners that write
// {"type": "tool", "name": NAME, "arguments": {…}} have it. A step that
// gives both spellings with different values is an error. Marshalled, a
// step uses kind and tool.
type PlanStep struct {
	Kind      StepKind        `json:"kind"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Text is a reply step's answer.
	Text string `json:"text,omitempty"`
	// Task is a task step's description.
	Task string `json:"task,omitempty"`
}

// A Plan is a goal and the steps that reach it.
type Plan struct {
	Goal  string     `json:"goal,omitempty"`
	Steps []PlanStep `json:"steps"`
}

// PlanParser reads a plan from a planner's reply.
type PlanParser interface {
	Parse(reply string) (*Plan, error)
}

// JSONPlanParser is the reference PlanParser: a JSON object {"goal": …,
// "steps": [{"kind": "tool", "tool": …, "arguments": {…}}, {"kind":
// "reply", "text": …}]}, found in the reply even with a code fence or
// prose around it; a bare array of steps is a plan too, and steps may be
// written {"type": "tool", "name": …} (see PlanStep). Keys it does not
// know are ignored: models add notes of their own.
type JSONPlanParser struct{}

// stepJSON is a plan step as JSON may write it: with our keys or with
// type and name.
type stepJSON struct {
	Kind      StepKind        `json:"kind"`
	Type      StepKind        `json:"type"`
	Tool      string          `json:"tool"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Text      string          `json:"text"`
	Task      string          `json:"task"`
}

// step resolves the two spellings of w.
func (w *stepJSON) step() (PlanStep, error) {
	if w.Kind != "" && w.Type != "" && w.Kind != w.Type {
		return PlanStep{}, fmt.Errorf("\"kind\" is %q and \"type\" is %q: give one", w.Kind, w.Type)
	}
	if w.Tool != "" && w.Name != "" && w.Tool != w.Name {
		return PlanStep{}, fmt.Errorf("\"tool\" is %q and \"name\" is %q: give one", w.Tool, w.Name)
	}
	s := PlanStep{Kind: cmp.Or(w.Kind, w.Type), Tool: w.Tool, Arguments: w.Arguments, Text: w.Text, Task: w.Task}
	if s.Tool == "" && s.Kind == StepTool {
		s.Tool = w.Name // a task or reply step's name is only a label
	}
	if string(s.Arguments) == "null" {
		s.Arguments = nil // no arguments: the tool gets {}
	}
	return s, nil
}

// UnmarshalJSON reads a step in either spelling (see PlanStep).
func (s *PlanStep) UnmarshalJSON(data []byte) error {
	var w stepJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	st, err := w.step()
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// DecodePlan reads a caller's plan from JSON: an object {"goal": …,
// "steps": […]} or a bare array of steps, in either spelling (see
// PlanStep). Unlike JSONPlanParser it is strict, since a person wrote the
// plan and a misspelt key would otherwise drop what it held: a key no
// step has, or anything after the plan, is an error, which names the
// step.
func DecodePlan(data []byte) (*Plan, error) {
	data = bytes.TrimSpace(data)
	decode := func(b []byte, v any) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return err
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return errors.New("more JSON after the plan")
		}
		return nil
	}
	// The steps are decoded one by one, so that an error names its step.
	var p Plan
	var raw []json.RawMessage
	if len(data) > 0 && data[0] == '[' {
		if err := decode(data, &raw); err != nil {
			return nil, err
		}
	} else {
		var w struct {
			Goal  string            `json:"goal"`
			Steps []json.RawMessage `json:"steps"`
		}
		if err := decode(data, &w); err != nil {
			return nil, err
		}
		p.Goal, raw = w.Goal, w.Steps
	}
	for i, r := range raw {
		var w stepJSON
		if err := decode(r, &w); err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		st, err := w.step()
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		p.Steps = append(p.Steps, st)
	}
	return &p, nil
}

// decodeModelPlan reads a model's plan: an object or an array of steps,
// leniently (keys it does not know are ignored).
func decodeModelPlan(data []byte) (*Plan, error) {
	var p Plan
	var steps []stepJSON
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &steps); err != nil {
			return nil, fmt.Errorf("the steps do not read as a plan: %w", err)
		}
	} else {
		var w struct {
			Goal  string     `json:"goal"`
			Steps []stepJSON `json:"steps"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, fmt.Errorf("the plan does not read as a plan: %w", err)
		}
		p.Goal, steps = w.Goal, w.Steps
	}
	p.Steps = make([]PlanStep, 0, len(steps))
	for i := range steps {
		st, err := steps[i].step()
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		p.Steps = append(p.Steps, st)
	}
	return &p, nil
}

// Parse implements PlanParser.
func (JSONPlanParser) Parse(reply string) (*Plan, error) {
	s := strings.TrimSpace(reply)
	if i := strings.Index(s, "```"); i >= 0 {
		body := s[i+3:]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[nl+1:]
		}
		if j := strings.Index(body, "```"); j >= 0 {
			s = strings.TrimSpace(body[:j])
		}
	}
	start := strings.IndexAny(s, "{[")
	if start < 0 {
		return nil, errors.New("the reply holds no JSON plan")
	}
	dec := json.NewDecoder(strings.NewReader(s[start:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("the plan is not valid JSON: %v", err)
	}
	return decodeModelPlan(raw)
}

// checkPlan reports what makes p unfit for a: no steps, a step of an
// unknown kind, a tool the agent does not have, a reply without text,
// and with args, arguments its tool's schema refuses (a model's plan is
// not checked for those: such a step fails when it comes, without a
// call). The error says which step.
func (a *Agent) checkPlan(p *Plan, args bool) error {
	bad := func(format string, args ...any) error {
		return &Error{Kind: FailInput, Code: CodeBadPlan, Msg: fmt.Sprintf(format, args...)}
	}
	if p == nil || len(p.Steps) == 0 {
		return bad("the plan has no steps")
	}
	for i, st := range p.Steps {
		switch st.Kind {
		case StepTool:
			if st.Tool == "" {
				return bad("step %d names no tool", i+1)
			}
			if a.tool(st.Tool) == nil {
				return bad("step %d: unknown tool %q (the agent has %s)", i+1, st.Tool, strings.Join(a.toolNames(), ", "))
			}
			if err := a.Tools.Validate(st.Tool, argsOrEmpty(st.Arguments)); args && err != nil {
				return bad("step %d: %v", i+1, err)
			}
		case StepReply:
			if strings.TrimSpace(st.Text) == "" {
				return bad("step %d is a reply without text", i+1)
			}
		case StepTask:
			if strings.TrimSpace(st.Task) == "" {
				return bad("step %d is a task without a description", i+1)
			}
		case "":
			return bad("step %d has no kind (want \"kind\" or \"type\": tool, task or reply)", i+1)
		default:
			return bad("step %d: unknown kind %q (want tool, task or reply)", i+1, st.Kind)
		}
	}
	return nil
}

func argsOrEmpty(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage(`{}`)
	}
	return a
}

func (a *Agent) toolNames() []string {
	if a.Tools == nil {
		return []string{"no tools"}
	}
	return a.Tools.Names()
}

// PlanExecute is the plan-and-execute policy (strategy: plan_execute):
// the model writes a plan (once more after a plan that does not parse or
// check, then the run fails saying why), or the caller gives one
// (Input.Plan); the steps run in order — a tool step is a tool call like
// any other, approvals included, and a step whose arguments its tool's
// schema refuses fails without a call. A reply step is the answer: the
// steps after it are skipped. Without one, the answer is a summary of the
// observations by the agent's model (or Summarizer), told to answer in
// the profile's language when the profile has one, or with
// SummaryTemplate (or when the summary call fails) each step's
// observation listed. A crash resumes at the step that had not finished.
type PlanExecute struct {
	// Parser reads the planner's reply; nil means JSONPlanParser.
	Parser PlanParser
	// MaxSteps caps a plan; zero means 10. Steps past it are skipped.
	MaxSteps int
	// Summarizer writes the answer from the observations; nil means the
	// agent's model.
	Summarizer model.Model
	// SummaryTemplate makes the answer of a plan without a reply step a
	// list of the steps' observations, one line each, in fixed English
	// words ("#1 tool calculator succeeded: …"): no model call.
	// Summarizer is then unused.
	SummaryTemplate bool
	// Replan, when a step fails, has the model plan the rest again from
	// the observations so far (at most maxReplans times a run).
	Replan bool
	// StructuredOutput asks the planner for JSON that follows PlanSchema
	// (response_format json_schema), for providers that support it
	// (OpenAI's and Anthropic's APIs do; many local servers do not).
	StructuredOutput bool
}

// PlanSchema is the JSON Schema of a Plan, as the planner is asked to
// follow it with StructuredOutput.
const PlanSchema = `{"type":"object","properties":{` +
	`"goal":{"type":"string"},` +
	`"steps":{"type":"array","items":{"type":"object","properties":{` +
	`"kind":{"type":"string","enum":["tool","task","reply"]},` +
	`"tool":{"type":"string"},"arguments":{"type":"object"},"task":{"type":"string"},"text":{"type":"string"}},` +
	`"required":["kind"]}}},"required":["steps"]}`

// Instruction kinds of PlanExecute, run by built-in executors.
const (
	KindPlan       Kind = "plan"
	KindPlanStep   Kind = "plan_step"
	KindPlanFinish Kind = "plan_finish"
)

// planAttempts is how many plans the model may write in a run.
const planAttempts = 2

// planState is PlanExecute's PolicyState, folded from the log.
type planState struct {
	Plan     *Plan                       `json:"plan,omitempty"`
	Started  []bool                      `json:"started,omitempty"`
	Finished []*session.PlanStepFinished `json:"finished,omitempty"`
	// Results are the tool results of the plan's calls, by step.
	Results  map[int]*session.ToolResult `json:"results,omitempty"`
	Attempts int                         `json:"attempts,omitempty"` // planner replies since the last plan
	Problem  string                      `json:"problem,omitempty"`  // why the last plan was refused
	Replans  int                         `json:"replans,omitempty"`
	// Failed is set when a step failed since the plan was (re)made.
	Failed bool `json:"failed,omitempty"`
	// Run is the run's id, which the steps' call ids carry: a tool's
	// idempotency key is the session's and the call's, and every turn
	// plans again from step 1.
	Run string `json:"run,omitempty"`
}

// maxReplans bounds re-planning in a run.
const maxReplans = 2

// NewPolicyState implements StatefulPolicy.
func (PlanExecute) NewPolicyState() PolicyState { return &planState{} }

// callID is the id of step i's tool call.
func (ps *planState) callID(i int) string { return fmt.Sprintf("plan_%s_%d", shortRun(ps.Run), i+1) }

func (ps *planState) Apply(e *session.Event) error {
	switch d := e.Data.(type) {
	case *session.RunStarted:
		*ps = planState{Run: e.RunID}
	case *session.ModelFinished:
		if d.Purpose == "plan" {
			ps.Attempts++
		}
	case *session.Error:
		if d.Code == CodeBadPlan {
			ps.Problem = d.Message
		}
	case *session.PlanCreated:
		ps.Attempts, ps.Problem, ps.Failed = 0, "", false
		if d.Source == "replan" && ps.Plan != nil {
			return ps.replan(d.Plan)
		}
		return ps.setPlan(d.Plan)
	case *session.PlanStepStarted:
		if d.Index >= 0 && d.Index < len(ps.Started) {
			ps.Started[d.Index] = true
		}
	case *session.PlanStepFinished:
		if d.Index >= 0 && d.Index < len(ps.Finished) {
			f := *d
			ps.Finished[d.Index] = &f
			if d.Status == StepFailed {
				ps.Failed = true
			}
		}
	case *session.ToolResult:
		if ps.Plan != nil {
			for i := range ps.Plan.Steps {
				if ps.callID(i) == d.CallID {
					if ps.Results == nil {
						ps.Results = map[int]*session.ToolResult{}
					}
					r := *d
					ps.Results[i] = &r
				}
			}
		}
	}
	return nil
}

// recordedPlan decodes a plan as plan_created records it, in PlanStep's
// own spelling, without its UnmarshalJSON (which decodes each step twice
// over): folding a log reads every plan in it.
func recordedPlan(raw json.RawMessage) (*Plan, error) {
	type plainStep PlanStep // the fields and tags, not the methods
	var w struct {
		Goal  string      `json:"goal"`
		Steps []plainStep `json:"steps"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	p := &Plan{Goal: w.Goal, Steps: make([]PlanStep, len(w.Steps))}
	for i := range w.Steps {
		p.Steps[i] = PlanStep(w.Steps[i])
	}
	return p, nil
}

func (ps *planState) setPlan(raw json.RawMessage) error {
	p, err := recordedPlan(raw)
	if err != nil {
		return err
	}
	ps.Plan = p
	ps.Started = make([]bool, len(p.Steps))
	ps.Finished = make([]*session.PlanStepFinished, len(p.Steps))
	return nil
}

// replan keeps the steps that finished and puts the new plan's steps
// after them.
func (ps *planState) replan(raw json.RawMessage) error {
	p, err := recordedPlan(raw)
	if err != nil {
		return err
	}
	done := ps.done()
	ps.Plan.Steps = append(ps.Plan.Steps[:done:done], p.Steps...)
	ps.Started = append(ps.Started[:done:done], make([]bool, len(p.Steps))...)
	ps.Finished = append(ps.Finished[:done:done], make([]*session.PlanStepFinished, len(p.Steps))...)
	ps.Replans++
	return nil
}

// done is how many steps, from the first, have finished.
func (ps *planState) done() int {
	n := 0
	for n < len(ps.Finished) && ps.Finished[n] != nil {
		n++
	}
	return n
}

// next returns the first step that has not finished, or -1.
func (ps *planState) next() int {
	for i := range ps.Finished {
		if ps.Finished[i] == nil {
			return i
		}
	}
	return -1
}

// Next implements Policy.
func (p PlanExecute) Next(ctx context.Context, a *Agent, s *State) (Instruction, error) {
	ps, _ := s.Policy().(*planState)
	if ps == nil {
		return Instruction{}, errors.New("plan_execute: the state has no plan state")
	}
	if len(s.Calls) > 0 || len(s.Requests) > 0 {
		return React{}.Next(ctx, a, s) // a tool step's call: approvals, running, waiting
	}
	switch {
	case ps.Plan == nil:
		return Instruction{Kind: KindPlan}, nil
	case p.Replan && ps.Failed && ps.Replans < maxReplans && ps.done() < p.maxStepsFor(s):
		return Instruction{Kind: KindPlan}, nil // plan the rest again, if steps are left
	case ps.next() >= 0:
		if i := ps.next(); ps.Started[i] && ps.Plan.Steps[i].Kind == StepTask {
			// A task step runs the think-act loop until the model answers.
			ins, err := React{}.Next(ctx, a, s)
			if err == nil && ins.Kind == KindFinish {
				return Instruction{Kind: KindPlanStep}, nil // its answer is the observation
			}
			return ins, err
		}
		return Instruction{Kind: KindPlanStep}, nil
	}
	return Instruction{Kind: KindPlanFinish}, nil
}

// maxStepsFor is the step cap of the run: its override, else the policy's.
func (p PlanExecute) maxStepsFor(st *State) int {
	if o := st.Overrides; o != nil && o.MaxSteps > 0 {
		return o.MaxSteps
	}
	return p.maxSteps()
}

func (p PlanExecute) maxSteps() int {
	if p.MaxSteps <= 0 {
		return 10
	}
	return p.MaxSteps
}

func planPolicy(x *Exec) (PlanExecute, *planState) {
	p, _ := x.agent.Policy.(PlanExecute)
	ps, _ := x.st.Policy().(*planState)
	return p, ps
}

// planRequest is the planner's request: the tools, the question, what ran
// and failed when replanning, a refused plan's problem. PlanModel sends
// it; SentRequest derives it.
func planRequest(x *Exec, p PlanExecute, ps *planState) *model.Request {
	var b strings.Builder
	fmt.Fprintf(&b, "Make a plan to answer the question below with the tools listed. Reply with only a JSON object:\n"+
		`{"goal": "…", "steps": [{"kind": "tool", "tool": "NAME", "arguments": {…}}, {"kind": "task", "task": "…"}, …, {"kind": "reply", "text": "…"}]}`+
		"\nUse at most %d steps. A tool step calls one tool with arguments you know now; a task step is work you will do "+
		"later with the tools, when its inputs are known. A reply step, when you can write the answer without the tools' results, "+
		"is the answer; otherwise leave it out and the results will be summarised.\n\nTools:\n", p.maxStepsFor(x.st))
	for _, sp := range x.agent.ToolSpecs() {
		fmt.Fprintf(&b, "- %s: %s\n  arguments schema: %s\n", sp.Name, sp.Description, sp.InputSchema)
	}
	fmt.Fprintf(&b, "\nQuestion: %s\n", x.st.Input)
	replanning := ps.Plan != nil
	done := 0
	if replanning {
		done = ps.done()
		fmt.Fprintf(&b, "\nA step failed. The steps run so far, and what they observed:\n%s"+
			"Plan the remaining steps only (at most %d), to reach the answer despite the failure.\n", planOutcomes(ps), p.maxStepsFor(x.st)-done)
	}
	if ps.Problem != "" {
		fmt.Fprintf(&b, "\nYour previous plan was refused: %s. Write a corrected plan.\n", ps.Problem)
	}
	req := &model.Request{System: x.systemPrompt(), Messages: []model.Message{model.TextMessage(model.RoleUser, b.String())}}
	if p.StructuredOutput {
		req.ResponseFormat = &model.ResponseFormat{Type: "json_schema", Name: "plan", Schema: json.RawMessage(PlanSchema)}
	}
	return req
}

// PlanModel is the built-in plan executor: the model writes the plan.
func PlanModel(ctx context.Context, x *Exec, _ Instruction) error {
	p, ps := planPolicy(x)
	if ps == nil {
		return &Error{Kind: FailConfig, Code: CodeNoExecutor, Msg: "plan: the agent's policy is not PlanExecute"}
	}
	replanning, done := ps.Plan != nil, 0
	if replanning {
		done = ps.done()
	}
	req := planRequest(x, p, ps)
	resp, err := x.Complete(ctx, ModelCall{Request: req, Purpose: "plan", Quiet: true})
	if err != nil {
		return err
	}
	parser := p.Parser
	if parser == nil {
		parser = JSONPlanParser{}
	}
	plan, perr := parser.Parse(resp.Message.Text())
	if perr == nil {
		if room := p.maxStepsFor(x.st) - done; len(plan.Steps) > room {
			plan.Steps = plan.Steps[:max(room, 0)] // capped at the step limit
		}
		perr = x.agent.checkPlan(plan, false)
	}
	if perr != nil {
		msg := AsError(perr).Msg
		if msg == "" {
			msg = perr.Error()
		}
		if ps.Attempts >= planAttempts {
			return &Error{Kind: FailPolicy, Code: CodeBadPlan, Msg: fmt.Sprintf("the model wrote no usable plan in %d attempts; the last: %s", planAttempts, msg)}
		}
		emit(x, session.Error{Code: CodeBadPlan, Message: msg, Recoverable: true})
		return nil
	}
	if plan.Goal == "" {
		plan.Goal = x.st.Input
	}
	raw, _ := json.Marshal(plan)
	source := "model"
	if replanning {
		source = "replan"
	}
	emit(x, session.PlanCreated{Plan: raw, Source: source})
	return nil
}

// ExecutePlanStep is the built-in plan_step executor: it starts the next step,
// or records the outcome of the one that ran.
func ExecutePlanStep(ctx context.Context, x *Exec, _ Instruction) error {
	_, ps := planPolicy(x)
	if ps == nil || ps.Plan == nil {
		return &Error{Kind: FailConfig, Code: CodeNoExecutor, Msg: "plan_step: no plan"}
	}
	i := ps.next()
	step := ps.Plan.Steps[i]
	if ps.Started[i] && step.Kind == StepTask {
		// The loop answered: that answer is the observation.
		res, _ := json.Marshal(lastAnswer(x.st))
		x.finishStep(ctx, i, StepCompleted, session.Observation{OK: true, Result: res})
		return nil
	}
	if ps.Started[i] {
		// Its tool call has a result (React ran it): the observation.
		r := ps.Results[i]
		if r == nil {
			return &Error{Kind: FailInternal, Msg: fmt.Sprintf("plan step %d started and has no result", i+1)}
		}
		status := StepCompleted
		if !r.OK {
			status = StepFailed
		}
		x.finishStep(ctx, i, status, session.Observation{OK: r.OK, Result: r.Result, Error: r.Error, LatencyMS: r.LatencyMS})
		return nil
	}
	emit(x, session.PlanStepStarted{Index: i, Kind: string(step.Kind), Tool: step.Tool, Task: step.Task})
	switch step.Kind {
	case StepReply:
		res, _ := json.Marshal(step.Text)
		x.finishStep(ctx, i, StepCompleted, session.Observation{OK: true, Result: res})
		// The reply is the answer: what comes after it is not run, and
		// says so (in the same commit, so a crash cannot run it either).
		for j := i + 1; j < len(ps.Plan.Steps); j++ {
			x.finishStep(ctx, j, StepSkipped, session.Observation{Error: fmt.Sprintf("not run: step %d is the answer", i+1)})
		}
	case StepTool:
		args := argsOrEmpty(step.Arguments)
		if err := x.agent.Tools.Validate(step.Tool, args); err != nil {
			// A step whose arguments its tool's schema refuses is a failed
			// observation, not a call.
			x.finishStep(ctx, i, StepFailed, session.Observation{Error: "not called: " + err.Error()})
			return nil
		}
		// The call is made as a model's would be, so that approvals,
		// idempotency and crash recovery apply to it.
		emit(x, session.ModelFinished{Model: "plan", ToolCalls: []model.ToolCall{{ID: ps.callID(i), Name: step.Tool, Arguments: args}},
			FinishReason: model.FinishToolCalls})
	}
	return nil
}

// lastAnswer is the text of the history's last assistant message.
func lastAnswer(st *State) string {
	for i := len(st.Messages) - 1; i >= 0; i-- {
		if m := st.Messages[i]; m.Role == model.RoleAssistant {
			return m.Text()
		}
	}
	return ""
}

// finishStep records step i's outcome and runs the plan-step hooks.
func (x *Exec) finishStep(ctx context.Context, i int, status string, o session.Observation) {
	d := session.PlanStepFinished{Index: i, Status: status, Observation: o}
	emit(x, d)
	_ = x.hooks.planStep(ctx, x.info(), &d)
}

// planSummaryRequest is the request of a plan's summary: the question and
// the steps' outcomes. PlanFinish sends it; SentRequest derives it.
func planSummaryRequest(x *Exec, ps *planState) *model.Request {
	system := summaryPrompt
	if lang := x.language(); lang != "" {
		system += " Answer in " + languageName(lang) + "."
	}
	return &model.Request{System: system,
		Messages: []model.Message{model.TextMessage(model.RoleUser, "Question: "+x.st.Input+"\n\nResults:\n"+planOutcomes(ps))}}
}

// PlanFinish is the built-in plan_finish executor: the answer, from the
// plan's reply step, else the template with SummaryTemplate, else a
// summary by a model call, else (the call failed or said nothing) the
// template.
func PlanFinish(ctx context.Context, x *Exec, _ Instruction) error {
	p, ps := planPolicy(x)
	if ps == nil || ps.Plan == nil {
		return &Error{Kind: FailConfig, Code: CodeNoExecutor, Msg: "plan_finish: no plan"}
	}
	for i, st := range ps.Plan.Steps {
		if f := ps.Finished[i]; st.Kind == StepReply && f != nil && f.Status == StepCompleted {
			return Finish(ctx, x, Instruction{Kind: KindFinish, Text: st.Text})
		}
	}
	if p.SummaryTemplate {
		return Finish(ctx, x, Instruction{Kind: KindFinish, Text: planTemplate(ps)})
	}
	req := planSummaryRequest(x, ps)
	resp, err := x.Complete(ctx, ModelCall{Request: req, Purpose: "summary", Model: p.Summarizer})
	answer := ""
	switch {
	case err != nil && (ctx.Err() != nil || isStoreOrLease(err)):
		return err
	case err == nil:
		answer = strings.TrimSpace(resp.Message.Text())
	}
	if answer == "" {
		answer = planTemplate(ps) // when no summary could be written
	}
	return Finish(ctx, x, Instruction{Kind: KindFinish, Text: answer})
}

// summaryPrompt is the system prompt of the summary call.
const summaryPrompt = "You answer the user's question from the results of the steps that were run for it. Be brief and exact; do not mention the steps."

// planTemplate is the answer written without a model: each step that ran,
// with what it observed, one line each, in fixed English words.
func planTemplate(ps *planState) string {
	var b strings.Builder
	for i, st := range ps.Plan.Steps {
		f := ps.Finished[i]
		if f == nil || f.Status == StepSkipped {
			continue
		}
		what := string(st.Kind)
		switch st.Kind {
		case StepTool:
			what = "tool " + st.Tool
		case StepTask:
			what = "task " + strconv.Quote(clipText(st.Task, 200))
		}
		if f.Observation.OK {
			fmt.Fprintf(&b, "#%d %s succeeded: %s\n", i+1, what, clipText(resultText(f.Observation.Result), 2000))
		} else {
			fmt.Fprintf(&b, "#%d %s failed: %s\n", i+1, what, f.Observation.Error)
		}
	}
	if b.Len() == 0 {
		return "(no step of the plan was run)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resultText is an observation's result as text: a JSON string unquoted
// (a task's answer), anything else as it is.
func resultText(r json.RawMessage) string {
	var s string
	if len(r) > 0 && r[0] == '"' && json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

// planOutcomes lists each step's outcome, one line each.
func planOutcomes(ps *planState) string {
	var b strings.Builder
	for i, st := range ps.Plan.Steps {
		f := ps.Finished[i]
		what := string(st.Kind)
		switch st.Kind {
		case StepTool:
			what = st.Tool + " " + string(argsOrEmpty(st.Arguments))
		case StepTask:
			what = "task: " + clipText(st.Task, 200)
		}
		switch {
		case f == nil:
			fmt.Fprintf(&b, "%d. %s: not run\n", i+1, what)
		case f.Status == StepSkipped:
			fmt.Fprintf(&b, "%d. %s: skipped\n", i+1, what)
		case f.Observation.OK:
			fmt.Fprintf(&b, "%d. %s: %s\n", i+1, what, clipText(string(f.Observation.Result), 2000))
		default:
			fmt.Fprintf(&b, "%d. %s: failed: %s\n", i+1, what, f.Observation.Error)
		}
	}
	return b.String()
}

// TaskAgent runs an agent plan-and-execute style: Run lets the model plan, ExecutePlan follows the caller's. Both return
// the run's Result and the plan with every step's outcome. The agent's
// policy must be PlanExecute.
type TaskAgent struct {
	Runner *Runner
	Agent  string
}

// PlanOutcome is a plan with the outcome of each of its steps.
type PlanOutcome struct {
	Plan  *Plan
	Steps []*session.PlanStepFinished // by step; nil for a step that did not finish
}

// Run plans and executes goal in the session.
func (t TaskAgent) Run(ctx context.Context, sessionID, goal string) (*Result, *PlanOutcome, error) {
	return t.collect(ctx, sessionID, t.RunEvents(ctx, sessionID, goal))
}

// ExecutePlan executes the caller's plan in the session: checked first
// (unknown tools, bad arguments, an empty plan are a precise error before
// anything runs).
func (t TaskAgent) ExecutePlan(ctx context.Context, sessionID string, plan *Plan) (*Result, *PlanOutcome, error) {
	return t.collect(ctx, sessionID, t.ExecutePlanEvents(ctx, sessionID, plan))
}

// RunEvents is Run as the events of the turn, streamed as Runner.Run
// streams them.
func (t TaskAgent) RunEvents(ctx context.Context, sessionID, goal string) iter.Seq2[*session.Event, error] {
	return t.Runner.Run(ctx, sessionID, Input{Text: goal, Agent: t.Agent})
}

// ExecutePlanEvents is ExecutePlan as the events of the turn; a plan that
// does not check is the sequence's only error.
func (t TaskAgent) ExecutePlanEvents(ctx context.Context, sessionID string, plan *Plan) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		a, err := t.Runner.agent(t.Agent)
		if err == nil {
			err = a.checkPlan(plan, true)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		goal := plan.Goal
		if goal == "" {
			goal = "execute the plan"
		}
		for e, err := range t.Runner.Run(ctx, sessionID, Input{Text: goal, Agent: t.Agent, Plan: plan}) {
			if !yield(e, err) {
				return
			}
		}
	}
}

// collect gathers a turn's events and the plan's outcome.
func (t TaskAgent) collect(ctx context.Context, id string, events iter.Seq2[*session.Event, error]) (*Result, *PlanOutcome, error) {
	res, err := Collect(events)
	if err != nil {
		return res, nil, err
	}
	st, lerr := t.Runner.Load(ctx, id)
	if lerr != nil {
		return res, nil, lerr
	}
	out := &PlanOutcome{}
	if ps, ok := st.Policy().(*planState); ok && ps.Plan != nil {
		out.Plan, out.Steps = ps.Plan, ps.Finished
	}
	return res, out, t.Runner.runError(ctx, id, res)
}

// language is the run's profile language: the run's override, else the
// agent's profile's (an agent the Builder made); "" when neither has one.
func (x *Exec) language() string {
	if o := x.st.Overrides; o != nil && len(o.Profile) > 0 {
		var over Profile
		if json.Unmarshal(o.Profile, &over) == nil && over.Language != "" {
			return over.Language
		}
	}
	return x.agent.profile.Language
}

// systemPrompt is the run's system prompt: the agent's, with the run's
// profile overrides rendered in.
func (x *Exec) systemPrompt() string {
	o := x.st.Overrides
	if o == nil || len(o.Profile) == 0 {
		return x.agent.SystemPrompt
	}
	var over Profile
	if json.Unmarshal(o.Profile, &over) != nil {
		return x.agent.SystemPrompt
	}
	a := x.agent
	if !a.built {
		return strings.TrimSpace(a.SystemPrompt + "\n\n" + over.Render())
	}
	p := a.profile
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&p.Name, over.Name}, {&p.Role, over.Role}, {&p.Goal, over.Goal},
		{&p.Backstory, over.Backstory}, {&p.Language, over.Language}, {&p.Tone, over.Tone},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return RenderSystemPrompt(p, a.instructions)
}
