// Package glue wires the Temporal engine into agentrt's CLI
// (app.Options): the engine of agentrt serve, and agentrt worker.
package glue

import (
	"context"
	"log/slog"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/temporal"
)

// Options sets o's Engine and RunWorker to Temporal's.
func Options(o app.Options) app.Options {
	o.Engine, o.RunWorker = Engine, RunWorker
	return o
}

// Engine is the runner's engine: the cluster's client, signalling the
// sessions' workflows.
func Engine(ctx context.Context, cfg *config.Config) (agentrt.Engine, func() error, error) {
	c, err := temporal.Dial(ctx, cfg.Temporal, nil)
	if err != nil {
		return nil, nil, err
	}
	return &temporal.Engine{Client: c, TaskQueue: cfg.Temporal.TaskQueue}, func() error { c.Close(); return nil }, nil
}

// RunWorker runs a Temporal worker of the config's task queue, stepping
// the runs through the app's runner, until ctx ends; the steps in flight
// then finish (Temporal's worker stop), or are tried again elsewhere.
func RunWorker(ctx context.Context, a *app.App) error {
	c, err := temporal.Dial(ctx, a.Config.Temporal, slog.Default())
	if err != nil {
		return err
	}
	defer c.Close()
	t := a.Config.Temporal
	w, err := temporal.NewWorker(c, t.TaskQueue, a.Runner, temporal.Options{StepTimeout: t.StepTimeout.Std(), HeartbeatTimeout: t.HeartbeatTimeout.Std(),
		Heartbeat: t.HeartbeatTimeout.Std() / 5})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}
