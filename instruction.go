package agentrt

import (
	"context"
	"encoding/json"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// Kind names an instruction type. Custom kinds are allowed: register an
// Executor for them on the Agent or in the runner Config.
type Kind string

// Built-in instruction kinds.
const (
	KindCallModel Kind = "call_model"
	KindCallTools Kind = "call_tools"
	// KindAskHuman asks people for decisions or answers (Instruction.Ask):
	// one request per call for an approval or a confirmation, one request
	// for a prompt or a selection. The run waits until all are resolved.
	KindAskHuman Kind = "ask_human"
	KindFinish   Kind = "finish"
	KindPause    Kind = "pause"
	// KindWait means nothing can happen until a human answers; the run
	// stops with status waiting. It has no executor.
	KindWait Kind = "wait"
)

// Instruction is what a Policy decides to do next.
type Instruction struct {
	Kind Kind
	// Calls are the tool calls of call_tools, and those an ask_human
	// approval or confirmation is about. They may share memory with the
	// state and the log: read them, never modify them.
	Calls []model.ToolCall
	// Text is the answer of finish, or the reason of pause.
	Text string
	// Ask is what ask_human asks; nil means an approval of Calls.
	Ask *Ask
	// Payload carries a custom instruction's data.
	Payload json.RawMessage
}

// Ask is what an ask_human instruction asks people: an approval, a
// free-text prompt or a selection.
type Ask struct {
	Kind session.RequestKind
	// Question is shown to the person; for approvals and confirmations an
	// empty one is written from each call.
	Question string
	// Options are a select request's choices; Multi allows several.
	Options []string
	Multi   bool
	// Metadata goes with the request to whoever answers it (see
	// session.InputRequired.Metadata).
	Metadata map[string]any
}

// Executor carries out one instruction. It reports what happened by
// emitting events on x (x.Emit) and may commit partial progress
// (x.Commit); the runner commits what is left when it returns. Returning
// an error fails the run with an error event. Every goroutine an executor
// starts must have ended when it returns.
type Executor func(ctx context.Context, x *Exec, ins Instruction) error

// Policy decides the next instruction from the state. It must not change
// the state. A policy that keeps state of its own implements
// StatefulPolicy.
type Policy interface {
	Next(ctx context.Context, a *Agent, s *State) (Instruction, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, a *Agent, s *State) (Instruction, error)

// Next implements Policy.
func (f PolicyFunc) Next(ctx context.Context, a *Agent, s *State) (Instruction, error) {
	return f(ctx, a, s)
}

// React is the think-act policy: call the model; run the tool
// calls it asks for (after approval where the policy says ask); call the
// model again with the results; finish when it answers without tools; pause
// when the round limit is reached.
//
// The zero React is ready to use; it is the policy of an Agent whose
// Policy is nil.
type React struct{}

// Next implements Policy.
func (React) Next(_ context.Context, a *Agent, s *State) (Instruction, error) {
	if len(s.Calls) > 0 {
		// Classify each call not yet done: ready to run (auto, approved,
		// rejected or denied — the last two get a failed result without
		// running), needing an approval, in doubt (a call of an at-most-once
		// tool that was running when its process stopped), or waiting for
		// a person.
		var nready, nask, nconfirm, nuser, nclient int
		waiting := false
		// pristine: no call's arguments changed since the model made it
		// (an edit on approval, or a tool_call event's, change them).
		pristine := true
		for i := range s.Calls {
			c := &s.Calls[i]
			if c.Approval != CallUndecided || c.Started {
				pristine = false
			}
			switch callClass(a, s, c) {
			case classReady:
				nready++
			case classAsk:
				nask++
			case classConfirm:
				nconfirm++
			case classUser:
				nuser++
			case classClient:
				nclient++
			case classWaiting:
				waiting = true
			}
		}
		switch {
		case nready > 0:
			// When the whole batch is ready and unchanged (the usual case),
			// name it with the assistant message's own list rather than a
			// new one.
			if n := len(s.Messages); pristine && nready == len(s.Calls) && n > 0 && len(s.Messages[n-1].ToolCalls) == nready {
				return Instruction{Kind: KindCallTools, Calls: s.Messages[n-1].ToolCalls}, nil
			}
			return Instruction{Kind: KindCallTools, Calls: callsOf(a, s, classReady, nready)}, nil
		case nask > 0:
			return Instruction{Kind: KindAskHuman, Ask: &Ask{Kind: session.RequestApproval}, Calls: callsOf(a, s, classAsk, nask)}, nil
		case nconfirm > 0:
			return Instruction{Kind: KindAskHuman, Ask: &Ask{Kind: session.RequestConfirm}, Calls: callsOf(a, s, classConfirm, nconfirm)}, nil
		case nuser > 0:
			// ask_user: one request per call, its question from the call.
			return Instruction{Kind: KindAskHuman, Ask: &Ask{Kind: session.RequestPrompt}, Calls: callsOf(a, s, classUser, nuser)}, nil
		case nclient > 0:
			// Calls of the client's tools: each handed to the client.
			return Instruction{Kind: KindAskHuman, Ask: &Ask{Kind: session.RequestClientTool}, Calls: callsOf(a, s, classClient, nclient)}, nil
		case waiting:
			return Instruction{Kind: KindWait}, nil
		}
	}
	if len(s.Requests) > 0 {
		return Instruction{Kind: KindWait}, nil
	}
	if n := len(s.Messages); n > 0 && !s.InModel {
		if last := s.Messages[n-1]; last.Role == model.RoleAssistant && len(last.ToolCalls) == 0 {
			return Instruction{Kind: KindFinish, Text: last.Text()}, nil
		}
	}
	if !s.InModel && s.Round-s.RoundBase >= a.Limits.maxRounds() {
		return Instruction{Kind: KindPause, Text: "max_rounds"}, nil
	}
	return Instruction{Kind: KindCallModel}, nil
}

type callClassKind int

const (
	classDone callClassKind = iota
	classReady
	classAsk
	classConfirm
	classUser   // a call of a tool that asks the user (ask_user)
	classClient // a call of a tool the client runs (Input.ClientTools)
	classWaiting
)

func callClass(a *Agent, s *State, c *CallState) callClassKind {
	if c.Done {
		return classDone
	}
	name := c.Call.Name
	switch c.Approval {
	case CallRejected, CallRetry:
		return classReady
	case CallPending:
		return classWaiting
	}
	if c.Approval == CallUndecided && s.clientTool(name) && a.tool(name) == nil {
		return classClient
	}
	ap := a.approvalFor(name)
	if ap == tool.ApprovalDeny && c.Approval != CallApproved {
		return classReady // fails without running
	}
	if c.Started && a.atMostOnce(name) {
		// It was running when its process stopped: whether it took effect
		// is for a person to say, not for the runtime to guess.
		return classConfirm
	}
	if c.Approval == CallUndecided && ap == tool.ApprovalAsk {
		if s.RuleFor(c.Call) != nil {
			return classReady // decided by a standing rule (CallTools says which)
		}
		if s.Parent != nil && a.Approval.AutoWhenDelegated {
			return classReady // delegated, and trusted to decide
		}
		return classAsk
	}
	if a.asksUser(name) {
		return classUser
	}
	return classReady
}

func callsOf(a *Agent, s *State, class callClassKind, n int) []model.ToolCall {
	out := make([]model.ToolCall, 0, n)
	for i := range s.Calls {
		if callClass(a, s, &s.Calls[i]) == class {
			out = append(out, s.Calls[i].Call)
		}
	}
	return out
}
