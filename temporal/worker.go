package temporal

import (
	"time"

	"github.com/agentrt/agentrt"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// NewWorker returns a Temporal worker (not started) of queue ("":
// DefaultTaskQueue) that runs the session workflow and steps its
// sessions through r: a runner over the deployment's shared store, with
// the deployment's agents, and no engine of its own.
func NewWorker(c client.Client, queue string, r *agentrt.Runner, o Options) (worker.Worker, error) {
	if r == nil {
		return nil, errNoRunner
	}
	if queue == "" {
		queue = DefaultTaskQueue
	}
	// A worker that stops lets the steps in flight finish (they are not
	// canceled: see Activities.Step) for this long before it goes.
	w := worker.New(c, queue, worker.Options{WorkerStopTimeout: stopGrace})
	Register(w, r, o)
	return w, nil
}

// stopGrace is how long a stopping worker waits for its steps in flight.
const stopGrace = time.Minute

// Register registers the session workflow and its activities, stepping
// through r, with w (a worker, or a test's environment).
func Register(w interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, r *agentrt.Runner, o Options) {
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, in SessionInput) error { return sessionWorkflow(ctx, in, o) },
		workflow.RegisterOptions{Name: WorkflowName})
	a := &Activities{Runner: r, Options: o}
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: ActivityStep})
	w.RegisterActivityWithOptions(a.Resume, activity.RegisterOptions{Name: ActivityResume})
}
