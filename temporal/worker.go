package temporal

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Worker is a Temporal worker of agentrt's sessions: one polling the
// deployment's task queue (the session workflow and its activities), and
// one polling a queue of its own, where a session's workflow sends the
// activities of a session this worker holds between steps (its next
// steps, its batch's tool calls).
type Worker struct {
	shared, own worker.Worker
	runner      *agentrt.Runner
	queue       string
}

// NewWorker returns a Worker (not started) of queue ("":
// DefaultTaskQueue) that runs the session workflow and steps its
// sessions through r: a runner over the deployment's shared store, with
// the deployment's agents, and no engine of its own. Its own queue is
// queue + "@" + a name unique to the process.
func NewWorker(c client.Client, queue string, r *agentrt.Runner, o Options) (*Worker, error) {
	if r == nil {
		return nil, errNoRunner
	}
	if queue == "" {
		queue = DefaultTaskQueue
	}
	own := queue + "@" + workerName()
	// A worker that stops lets the steps in flight finish (they are not
	// canceled: see Activities.Step) for this long before it goes.
	opts := worker.Options{WorkerStopTimeout: stopGrace}
	w := &Worker{shared: worker.New(c, queue, opts), own: worker.New(c, own, opts), runner: r, queue: own}
	o.Queue = own
	a := &Activities{Runner: r, Options: o}
	register(w.shared, a, o, true)
	register(w.own, a, o, false)
	return w, nil
}

// workerName is a name unique to this process and start.
func workerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "worker"), os.Getpid(), rand.Text()[:8])
}

// Queue is the worker's own task queue.
func (w *Worker) Queue() string { return w.queue }

// Start starts polling both queues.
func (w *Worker) Start() error {
	if err := w.own.Start(); err != nil {
		return err
	}
	if err := w.shared.Start(); err != nil {
		w.own.Stop()
		return err
	}
	return nil
}

// Stop stops polling, waits for the activities in flight (a minute at
// most), then lets go of the sessions the worker held between steps, so
// that other workers step them at once (their tool calls not begun are
// given up: the next step runs them).
func (w *Worker) Stop() {
	var wg sync.WaitGroup
	wg.Go(w.own.Stop)
	wg.Go(w.shared.Stop)
	wg.Wait()
	w.runner.LetGoAll()
}

// stopGrace is how long a stopping worker waits for its steps in flight.
const stopGrace = time.Minute

// Register registers the session workflow and its activities, stepping
// through r, with w (a test's environment, or a worker.Worker of the
// caller's). With o.Queue empty each step lets go of its session and
// runs a batch of tool calls whole; with it set, w must be the only
// worker of that queue (as NewWorker's own is).
func Register(w registry, r *agentrt.Runner, o Options) {
	register(w, &Activities{Runner: r, Options: o}, o, true)
}

type registry interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}

func register(w registry, a *Activities, o Options, workflows bool) {
	if workflows {
		w.RegisterWorkflowWithOptions(func(ctx workflow.Context, in SessionInput) error { return sessionWorkflow(ctx, in, o) },
			workflow.RegisterOptions{Name: WorkflowName})
	}
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: ActivityStep})
	w.RegisterActivityWithOptions(a.Resume, activity.RegisterOptions{Name: ActivityResume})
	w.RegisterActivityWithOptions(a.Tool, activity.RegisterOptions{Name: ActivityTool})
}
