package app

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// DefaultChannelDebounce is how long a channel's conversation stays
// quiet before its turn, unless its debounce says otherwise: people on a
// chat send a thought in several messages.
const DefaultChannelDebounce = 1500 * time.Millisecond

// GatewayConfig is the gateway's configuration from cfg's gateway block
// and its agents' gateway settings, for runner r: input that names no
// session goes to its source's session (gateway.sources.NAME.session,
// else the source's name), and input takes at most max_input_bytes.
// opts adds the caller's modules and failure hook.
func GatewayConfig(cfg *config.Config, r *agentrt.Runner, opts Options) gateway.Config {
	settings := func(s config.GatewaySettings) gateway.SourceConfig {
		return gateway.SourceConfig{Debounce: s.Debounce.Std(), MaxWait: s.MaxWait.Std(), Policy: gateway.Policy(s.Policy),
			MaxPending: s.MaxPending, MaxPendingBytes: int(min(s.MaxPendingBytes, int64(^uint(0)>>1))), MaxRestarts: s.MaxRestarts,
			Prompts: gateway.Prompts(s.Prompts)}
	}
	top := settings(cfg.Gateway.GatewaySettings)
	gc := gateway.Config{
		Runner:          r,
		Debounce:        top.Debounce,
		MaxWait:         top.MaxWait,
		Policy:          top.Policy,
		MaxPending:      top.MaxPending,
		MaxPendingBytes: top.MaxPendingBytes,
		MaxRestarts:     top.MaxRestarts,
		Prompts:         top.Prompts,
		Workers:         cfg.Gateway.Workers,
		Poll:            cfg.Gateway.Poll.Std(),
		MaxInputBytes:   int(min(cfg.InputLimit(), int64(^uint(0)>>1))),
		SessionFor:      func(source string) (string, error) { return cfg.SessionFor(source), nil },
		Modules:         opts.GatewayModules,
		OnError:         opts.GatewayOnError,
		OnFull:          opts.GatewayOnFull,
		Now:             opts.Now,
		// A module that ignores its context holds agentrt serve's (and
		// agentrt gateway's) exit no longer than a run does.
		ShutdownGrace: cfg.Server.ShutdownGrace.Std(),
	}
	for _, name := range cfg.AgentNames() {
		if s := cfg.Agents[name].Gateway; s != (config.GatewaySettings{}) {
			if gc.Agents == nil {
				gc.Agents = map[string]gateway.SourceConfig{}
			}
			gc.Agents[name] = settings(s)
		}
	}
	for _, name := range cfg.ChannelNames() {
		// A chat's conversation: a person writes in bursts.
		s := settings(cfg.Channels[name].GatewaySettings)
		s.Debounce = cmp.Or(s.Debounce, DefaultChannelDebounce)
		// A person answers the agent's question by writing.
		s.Prompts = cmp.Or(s.Prompts, gateway.PromptsAnswer)
		if gc.Prefixes == nil {
			gc.Prefixes = map[string]gateway.SourceConfig{}
		}
		gc.Prefixes[name+":"] = s
	}
	for name, s := range cfg.Gateway.Sources {
		if gc.Sources == nil {
			gc.Sources = map[string]gateway.SourceConfig{}
		}
		gc.Sources[name] = settings(s.GatewaySettings)
	}
	return gc
}

// buildGateway builds the app's gateway, when its store keeps an inbox.
func (a *App) buildGateway(cfg *config.Config, opts Options) error {
	if _, ok := a.Store.(session.Inbox); !ok {
		return nil
	}
	g, err := gateway.New(GatewayConfig(cfg, a.Runner, opts))
	if err != nil {
		return err
	}
	a.Gateway = g
	return nil
}

// NeedGateway returns the app's gateway, or why there is none: the store
// keeps no inbox.
func (a *App) NeedGateway() (*gateway.Gateway, error) {
	if a.Gateway == nil {
		return nil, &agentrt.Error{Kind: agentrt.FailConfig, Code: agentrt.CodeConfig,
			Msg: fmt.Sprintf("the store %s keeps no inbox of inputs (session.Inbox), which the gateway needs", postgres.Redact(a.StoreDSN))}
	}
	return a.Gateway, nil
}

// RunGateway runs the gateway's loop (gateway.Gateway.Run) until ctx ends
// or the app is closed, and returns once its workers have stopped. Close
// stops it first, before the runner's runs, and waits for it.
func (a *App) RunGateway(ctx context.Context) error {
	g, err := a.NeedGateway()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	defer close(stopped)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return errClosed
	}
	a.undo = append(a.undo, func() error {
		cancel()
		<-stopped
		return nil
	})
	a.mu.Unlock()
	return g.Run(ctx)
}
