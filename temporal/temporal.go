// Package temporal runs agentrt's runs on a Temporal cluster: a workflow
// per session, whose activities step the session's run one step (a model
// call, the decision about a batch of tool calls) and one tool call at a
// time, on the worker that holds the session, and whose child workflows
// run its sub-agents' turns.
//
// The agentrt log stays the record: an activity steps the session
// through an agentrt.Runner (Runner.StepSessionCalls, Runner.RunCall,
// fenced by the session's lease as any run), and the workflow carries
// only the session's id, its position and the step's outcome — never the
// conversation, a model's input or a tool's output. A workflow run holds
// one turn: it continues as new when the turn ends, so that a history
// stays small however long the conversation.
//
// Engine is the agentrt.Engine of the runner that starts and continues
// runs (agentrt serve with engine: temporal): it signals the session's
// workflow, starting it if need be (SignalWithStart). NewWorker makes the
// worker that runs the workflow and its activities for the runner that
// steps them (agentrt worker).
package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
	"go.temporal.io/sdk/client"
)

// Names as the Temporal UI shows them.
const (
	// WorkflowName is the type of a session's workflow.
	WorkflowName = "agentrt.Session"
	// SignalDrive hands the workflow a run to step (agentrt.Drive).
	SignalDrive = "agentrt.drive"
	// ActivityStep steps a session once; ActivityResume continues a run
	// whose requests' deadline passed (their default decisions).
	ActivityStep   = "agentrt.Step"
	ActivityResume = "agentrt.Resume"
	// ActivityTool runs one tool call a step left (agentrt.Runner.RunCall).
	ActivityTool = "agentrt.Tool"
	// DefaultTaskQueue is the task queue of the workflows and their
	// activities when the configuration names none.
	DefaultTaskQueue = "agentrt"
)

// WorkflowID is the id of the workflow of session id of tenant: one per
// session, readable in the Temporal UI.
func WorkflowID(tenant, id string) string {
	return "agentrt/" + tenant + "/" + id
}

// Engine hands runs to their sessions' workflows. It is safe for
// concurrent use.
type Engine struct {
	Client    client.Client
	TaskQueue string // "": DefaultTaskQueue
}

var _ agentrt.Engine = (*Engine)(nil)

// Name is the engine's name in the runs' events (run_started.engine).
func (e *Engine) Name() string { return EngineName }

// EngineName names the Temporal engine in the runs' events; a worker's
// runner records it too (agentrt.Config.EngineName).
const EngineName = "temporal"

// Drive signals the workflow of d's session to step d's run, starting it
// when it does not run (SignalWithStart): the workflow id is the
// session's, so a session has one workflow at a time.
func (e *Engine) Drive(ctx context.Context, d agentrt.Drive) error {
	if e.Client == nil {
		return errors.New("temporal: the engine has no client")
	}
	queue := e.TaskQueue
	if queue == "" {
		queue = DefaultTaskQueue
	}
	id := WorkflowID(d.Tenant, d.SessionID)
	_, err := e.Client.SignalWithStartWorkflow(ctx, id, SignalDrive, d, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: queue,
		// What the UI lists: the session, and what woke it.
		StaticSummary: fmt.Sprintf("agentrt session %s (agent %s)", d.SessionID, d.Agent),
	}, WorkflowName, SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Agent: d.Agent})
	if err != nil {
		return fmt.Errorf("temporal: signal workflow %s: %w", id, err)
	}
	return nil
}

// SessionInput is a session workflow's input: which session, and the run
// a workflow run continued as new was handed (Next), if one was waiting.
type SessionInput struct {
	Tenant    string         `json:"tenant"`
	SessionID string         `json:"session_id"`
	Agent     string         `json:"agent,omitempty"`
	Next      *agentrt.Drive `json:"next,omitempty"`
	// Turns counts the workflow's turns before this run (continued as
	// new), for the UI.
	Turns int `json:"turns,omitempty"`
	// Queue is the task queue of the worker holding the session, when
	// the run continued as new mid-turn (see StepResult.Queue).
	Queue string `json:"queue,omitempty"`
	// Child: the workflow is a child workflow, a sub-agent's turn its
	// parent's step began: it ends (rather than continue as new) when the
	// turn ends, or waits for a person — whose requests are then the
	// parent's.
	Child bool `json:"child,omitempty"`
}

// label is a short readable line for a step: what it will do.
func label(next string) string {
	next = strings.TrimSpace(next)
	if next == "" {
		return "step"
	}
	return next
}
