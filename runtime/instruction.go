package runtime

import (
	"context"
	"encoding/json"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/tool"
)

// Kind names an instruction type. Custom kinds are allowed: register an
// Executor for them on the Agent or in the runner Config.
type Kind string

// Built-in instruction kinds.
const (
	KindCallModel       Kind = "call_model"
	KindCallTools       Kind = "call_tools"
	KindRequestApproval Kind = "request_approval"
	KindFinish          Kind = "finish"
	KindPause           Kind = "pause"
	// KindWait means nothing can happen until a human answers; the run
	// stops with status waiting. It has no executor.
	KindWait Kind = "wait"
)

// Instruction is what a Policy decides to do next.
type Instruction struct {
	Kind Kind
	// Calls are the tool calls of call_tools and request_approval.
	Calls []model.ToolCall
	// Text is the answer of finish, or the reason of pause.
	Text string
	// Payload carries a custom instruction's data.
	Payload json.RawMessage
}

// Executor carries out one instruction. It reports what happened by
// emitting events on x (x.Emit) and may commit partial progress
// (x.Commit); the runner commits what is left when it returns. Returning
// an error fails the run with an error event.
type Executor func(ctx context.Context, x *Exec, ins Instruction) error

// Policy decides the next instruction from the state. It must not change
// the state.
type Policy interface {
	Next(ctx context.Context, a *Agent, s *State) (Instruction, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, a *Agent, s *State) (Instruction, error)

// Next implements Policy.
func (f PolicyFunc) Next(ctx context.Context, a *Agent, s *State) (Instruction, error) {
	return f(ctx, a, s)
}

// React is the think-act policy (seed 002): call the model; run the tool
// calls it asks for (after approval where the policy says ask); call the
// model again with the results; finish when it answers without tools; pause
// when the round limit is reached.
var React Policy = PolicyFunc(react)

func react(_ context.Context, a *Agent, s *State) (Instruction, error) {
	if len(s.Calls) > 0 {
		var ready, ask []model.ToolCall
		waiting := false
		for i := range s.Calls {
			c := &s.Calls[i]
			if c.Done {
				continue
			}
			switch c.Approval {
			case CallApproved, CallRejected:
				ready = append(ready, c.Call)
			case CallPending:
				waiting = true
			default:
				if a.Approval.For(c.Call.Name, a.tool(c.Call.Name)) == tool.ApprovalAsk {
					ask = append(ask, c.Call)
				} else {
					ready = append(ready, c.Call)
				}
			}
		}
		switch {
		case len(ready) > 0:
			return Instruction{Kind: KindCallTools, Calls: ready}, nil
		case len(ask) > 0:
			return Instruction{Kind: KindRequestApproval, Calls: ask}, nil
		case waiting:
			return Instruction{Kind: KindWait}, nil
		}
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
