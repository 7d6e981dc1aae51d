package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
)

// engine: temporal needs the engine the temporal module's agentrt gives
// (Options.Engine): without it the app is not built, and says which
// agentrt to use; with it the runner hands its runs to it, and a worker's
// runner hands it the sub-agents' runs and names the engine.
func TestEngineOption(t *testing.T) {
	cfg, err := config.Parse("agentrt.yaml", []byte("engine: temporal\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := Build(ctx, cfg, Options{StoreDSN: "memory:"}); err == nil || !strings.Contains(err.Error(), "agentrt.yaml:1:1: engine: temporal needs the agentrt built with Temporal") {
		t.Fatalf("without the engine: %v", err)
	}
	built := 0
	opts := Options{StoreDSN: "memory:", Engine: func(context.Context, *config.Config) (agentrt.Engine, func() error, error) {
		built++
		return nil, func() error { return nil }, errors.New("no cluster here")
	}}
	if _, err := Build(ctx, cfg, opts); err == nil || !strings.Contains(err.Error(), "engine temporal: no cluster here") || built != 1 {
		t.Fatalf("an engine that cannot be had: %v (built %d)", err, built)
	}
}
