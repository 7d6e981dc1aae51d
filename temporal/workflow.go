package temporal

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// StepInput is what a step activity is given: the session, and the run
// the workflow steps (for the UI and the logs: a session's one workflow
// steps whatever run the session has).
type StepInput struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id,omitempty"`
	// Calls: the workflow runs a batch's tool calls one activity each
	// (ActivityTool, on StepResult.Queue) and steps the session on the
	// worker that holds it. Unset by the workflows of an earlier version
	// still in flight: their steps run whole batches and let go.
	Calls bool `json:"calls,omitempty"`
}

// CallInput is what a tool activity is given: a call a step left.
type CallInput struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id,omitempty"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

// StepResult is what a step activity says: where the session stands after
// it. Small, whatever the step did: the events are in the agentrt store.
type StepResult struct {
	Status session.Status `json:"status"`
	RunID  string         `json:"run_id,omitempty"`
	// Seq is the session's last event after the step.
	Seq int64 `json:"seq"`
	// Deadline, while the run waits for people, is when the first of its
	// requests expires (nil: never).
	Deadline *time.Time `json:"deadline,omitempty"`
	// Next says what the next step will do ("model call", "tools:
	// deploy"), for the UI.
	Next string `json:"next,omitempty"`
	// Calls are the tool calls the step left to run, one ActivityTool
	// each, on Queue.
	Calls []agentrt.DeferredCall `json:"calls,omitempty"`
	// Queue is the task queue of the worker that holds the session after
	// the step, for the calls it left: their activities and the next step
	// go there (the next step to the workflow's queue if that worker does
	// not take them in time). Empty: the session was let go of; any
	// worker steps it.
	Queue string `json:"queue,omitempty"`
}

// Options are the activities' timeouts and retries, which a worker and
// the workflow agree on.
type Options struct {
	// StepTimeout bounds one step or tool call (a model call, a tool's
	// run, a batch of tool calls run whole); zero: an hour.
	StepTimeout time.Duration
	// Heartbeat is how often a step reports that its worker lives; a step
	// not heard from for HeartbeatTimeout is tried again elsewhere. Zero:
	// 2 s and 10 s.
	Heartbeat, HeartbeatTimeout time.Duration
	// Queue is the worker's own task queue (NewWorker's), polled by it
	// alone: a step that leaves tool calls keeps its session (its lease
	// and state), and the calls — one activity each — and the step after
	// them are sent there. Empty (Register's): each step lets go of its
	// session, and runs a batch of tool calls whole.
	Queue string
}

func (o Options) stepTimeout() time.Duration {
	if o.StepTimeout > 0 {
		return o.StepTimeout
	}
	return time.Hour
}

func (o Options) heartbeatTimeout() time.Duration {
	if o.HeartbeatTimeout > 0 {
		return o.HeartbeatTimeout
	}
	return 10 * time.Second
}

// stickyWait is how long an activity for the worker holding a session
// may wait for that worker to take it (ScheduleToStartTimeout) before the
// workflow gives the step to any worker: that worker died, or stopped.
const stickyWait = 5 * time.Second

// settle is how long a workflow run whose turn ended waits for the
// session's next run before it continues as new without one.
const settle = time.Second

// expiryRetry is the least a workflow waits for a deadline: one that
// passed by Temporal's clock and not yet by the store's is asked about
// again after it, not in a loop.
const expiryRetry = 2 * time.Second

// maxTurnSteps bounds the steps of one workflow run: a run whose agent
// goes on longer (an agent without a round limit) continues as new
// mid-turn, so that its history stays bounded too.
const maxTurnSteps = 500

// SessionWorkflow is a session's workflow: it steps each run it is
// handed (SignalDrive) until the run stops, waits while the run waits for
// people — for their answer (handed again by whoever recorded it) or the
// first request's deadline (a timer, then ActivityResume) — and continues
// as new when the turn ends, carrying only the session's id.
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	return sessionWorkflow(ctx, in, Options{})
}

// sessionWorkflow is SessionWorkflow with the activities' options.
func sessionWorkflow(ctx workflow.Context, in SessionInput, o Options) error {
	drives := workflow.GetSignalChannel(ctx, SignalDrive)
	var d agentrt.Drive
	if in.Next != nil {
		d = *in.Next
	} else {
		drives.Receive(ctx, &d)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: o.stepTimeout(),
		HeartbeatTimeout:    o.heartbeatTimeout(),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    500 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			// A step whose worker died, or whose session's lease its dead
			// worker still holds, is tried until it goes through; a step
			// the runtime refuses for good is not.
			NonRetryableErrorTypes: []string{errPermanent},
		},
	})
	// Workflows begun before tool calls ran one activity each (version
	// DefaultVersion) go on as they began: whole batches in a step.
	perCall := workflow.GetVersion(ctx, "agentrt.calls", workflow.DefaultVersion, 1) == 1
	step := StepInput{Tenant: in.Tenant, SessionID: in.SessionID, RunID: d.RunID, Calls: perCall}
	next := "model call"
	queue := in.Queue // the worker holding the session, if one does
	for steps := 0; ; steps++ {
		if steps == maxTurnSteps {
			return workflow.NewContinueAsNewError(ctx, WorkflowName, SessionInput{Tenant: in.Tenant, SessionID: in.SessionID,
				Agent: in.Agent, Next: &d, Turns: in.Turns, Queue: queue, Child: in.Child})
		}
		var res StepResult
		err := workflow.ExecuteActivity(onQueue(actx, queue, label(next)), ActivityStep, step).Get(ctx, &res)
		if err != nil && queue != "" {
			// The worker holding the session did not take the step (it
			// died, or stops): any worker takes it, once the session's
			// lease is free.
			queue = ""
			err = workflow.ExecuteActivity(onQueue(actx, "", label(next)), ActivityStep, step).Get(ctx, &res)
		}
		if err != nil {
			// The runtime refused the step for good (its store says
			// why): the turn is over for the workflow; the session's
			// log says what happened.
			workflow.GetLogger(ctx).Error("agentrt: a step failed for good", "session", in.SessionID, "error", err)
			break
		}
		queue = res.Queue
		if len(res.Calls) > 0 {
			queue = runCalls(ctx, actx, step, res)
			next = "model call"
			continue
		}
		next = res.Next
		if res.Status == session.StatusRunning {
			continue
		}
		if res.Status != session.StatusWaiting {
			break // done, failed, paused, interrupted, canceled: the turn is over
		}
		if in.Child {
			// A sub-agent waiting for a person: its requests are its
			// parent's now, whose run waits; the answer goes on in the
			// parent's turn.
			return nil
		}
		// Waiting for people: their answer is handed over by whoever
		// recorded it (a drive), or the first deadline passes.
		answered, expired := false, false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(drives, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, &d)
			answered = true
		})
		var cancelTimer workflow.CancelFunc
		if res.Deadline != nil {
			tctx, cancel := workflow.WithCancel(ctx)
			cancelTimer = cancel
			// A deadline passed already by this clock waits a moment all
			// the same: the store's clock (the workers') may lag, and a
			// request it does not see expired yet is asked about again.
			sel.AddFuture(workflow.NewTimer(tctx, max(res.Deadline.Sub(workflow.Now(ctx)), expiryRetry)), func(workflow.Future) {
				expired = true
			})
		}
		sel.Select(ctx)
		if cancelTimer != nil && !expired {
			cancelTimer()
		}
		if answered {
			step.RunID = d.RunID
			next = "model call"
			continue
		}
		if expired {
			rctx := workflow.WithActivityOptions(actx, withSummary(workflow.GetActivityOptions(actx), "requests expired"))
			if err := workflow.ExecuteActivity(rctx, ActivityResume, step).Get(ctx, &res); err != nil {
				workflow.GetLogger(ctx).Error("agentrt: an expiry failed for good", "session", in.SessionID, "error", err)
				break
			}
			// Still waiting (answered meanwhile, or not yet expired by
			// the store's clock): the next step says so, and the wait
			// begins again.
			next = res.Next
			queue = res.Queue
			continue
		}
	}
	if in.Child {
		return nil // the sub-agent's turn is over: its parent collects it
	}
	// The turn is over: the next one begins a workflow run of its own —
	// with a run already handed over, if one came meanwhile, or comes
	// within settle: a client that sends its next message the moment it
	// has the answer would otherwise signal this run as it continues as
	// new, which Temporal refuses (the workflow task fails, and is tried
	// again seconds later).
	var waiting *agentrt.Drive
	var nd agentrt.Drive
	if drives.ReceiveAsync(&nd) {
		waiting = &nd
	} else if workflow.GetVersion(ctx, "agentrt.settle", workflow.DefaultVersion, 1) == 1 {
		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(drives, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, &nd)
			waiting = &nd
		})
		sel.AddFuture(workflow.NewTimer(tctx, settle), func(workflow.Future) {})
		sel.Select(ctx)
		cancel()
	}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, SessionInput{Tenant: in.Tenant, SessionID: in.SessionID,
		Agent: in.Agent, Next: waiting, Turns: in.Turns + 1})
}

func withSummary(o workflow.ActivityOptions, s string) workflow.ActivityOptions {
	o.Summary = s
	return o
}

// onQueue is actx for an activity labelled summary on queue, a worker's
// own (tried once, and only if that worker takes it within stickyWait),
// or the workflow's ("").
func onQueue(actx workflow.Context, queue, summary string) workflow.Context {
	o := withSummary(workflow.GetActivityOptions(actx), summary)
	if queue != "" {
		o.TaskQueue = queue
		o.ScheduleToStartTimeout = stickyWait
		rp := *o.RetryPolicy
		rp.MaximumAttempts = 1
		o.RetryPolicy = &rp
	}
	return workflow.WithActivityOptions(actx, o)
}

// runCalls runs the tool calls a step left, an activity each, at once, on
// the worker holding them, and returns the queue of the session's next
// step. A call's activity is tried once: a call whose worker died is the
// next step's, by agentrt's rules (a tool that may run again runs again
// with the same idempotency key; an at-most-once tool's call in doubt is
// a person's to confirm). A delegation to a sub-agent runs as a child
// workflow of the sub-agent's session (its turn begun by the step), whose
// end an activity then records as the call's result.
func runCalls(ctx, actx workflow.Context, step StepInput, res StepResult) (queue string) {
	queue = res.Queue
	wg := workflow.NewWaitGroup(ctx)
	for _, c := range res.Calls {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			summary := "tool " + c.Name
			if c.Child != nil {
				runChild(ctx, step, c)
				summary = "sub-agent " + c.Child.Agent + " answered"
			}
			cctx := onQueue(actx, res.Queue, summary)
			if res.Queue == "" {
				o := workflow.GetActivityOptions(cctx)
				rp := *o.RetryPolicy
				rp.MaximumAttempts = 1
				o.RetryPolicy = &rp
				cctx = workflow.WithActivityOptions(cctx, o)
			}
			var out agentrt.CallOutcome
			err := workflow.ExecuteActivity(cctx, ActivityTool, CallInput{Tenant: step.Tenant, SessionID: step.SessionID,
				RunID: res.RunID, CallID: c.ID, Name: c.Name}).Get(ctx, &out)
			if err == nil {
				return
			}
			var ae *temporal.ApplicationError
			if errors.As(err, &ae) && ae.Type() == errNotHeld {
				return // given up, or run already: its worker goes on
			}
			workflow.GetLogger(ctx).Warn("agentrt: a tool call's activity failed", "session", step.SessionID, "call", c.ID, "error", err)
			queue = "" // its worker died or stopped: any worker steps next
		})
	}
	wg.Wait(ctx)
	return queue
}

// runChild runs the sub-agent's turn of delegation c as a child workflow
// of its session, until the turn ends or waits for a person. A child
// workflow that could not run is no error here: the activity that
// records the call's result finds the turn unfinished, and the parent's
// next step follows it.
func runChild(ctx workflow.Context, step StepInput, c agentrt.DeferredCall) {
	id := WorkflowID(step.Tenant, c.Child.SessionID)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:    id,
		StaticSummary: fmt.Sprintf("agentrt sub-agent %s of session %s (session %s)", c.Child.Agent, step.SessionID, c.Child.SessionID),
	})
	d := agentrt.Drive{Tenant: step.Tenant, SessionID: c.Child.SessionID, Agent: c.Child.Agent, RunID: c.Child.RunID, Why: "start"}
	err := workflow.ExecuteChildWorkflow(cctx, WorkflowName, SessionInput{Tenant: step.Tenant, SessionID: c.Child.SessionID,
		Agent: c.Child.Agent, Next: &d, Child: true}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("agentrt: a sub-agent's child workflow failed", "session", step.SessionID, "child", c.Child.SessionID, "error", err)
	}
}
