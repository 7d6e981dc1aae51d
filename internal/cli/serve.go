package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/telemetry"
)

// DefaultAddr is where agentrt serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

func newServeCmd(g *globals) *cobra.Command {
	var addr, logFormat, logLevel string
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080] [--log-format text|json] [--log-level info]",
		Short: "serve the HTTP API: sessions, input through the gateway, resumable event streams, human requests",
		Long: `Serves the HTTP API (docs/http-api.md) until SIGTERM or Ctrl-C. Input goes
through the gateway (coalescing, debounce, the busy policy); every event
stream resumes from Last-Event-ID, on this server or another sharing the
store. The server resumes runs whose process died and expires overdue
requests. On SIGTERM it stops taking work, lets runs finish for
server.shutdown_grace, and leaves those still running to another replica.

Without API keys (server.api_keys) it answers only clients on this
machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(g.s.Err, logFormat, logLevel)
			if err != nil {
				return err
			}
			logSignals(cmd.Context(), log)
			// What the gateway does with input nobody waits on (a turn
			// that failed and set its inputs aside, an inbox it could not
			// read) is said nowhere else.
			g.opts.GatewayOnError = func(source string, err error) {
				attrs := []any{"source", source, "error", err.Error()}
				if re := (*agentrt.Error)(nil); errors.As(err, &re) && re.Code != "" {
					attrs = append(attrs, "code", re.Code)
				}
				log.Warn("gateway", attrs...)
			}
			g.opts.GatewayOnFull = func(busy, waiting int) {
				log.Warn("turns wait for a free gateway worker: raise gateway.workers if memory allows (once a minute at most while they wait)",
					"busy", busy, "waiting", waiting)
			}
			ctx := cmd.Context()
			// Metrics and traces observe every run of the app's runner.
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			tp, stopTraces, err := telemetry.TracerProvider(ctx)
			if err != nil {
				return usageErr("%v", err)
			}
			defer stopTraces(context.WithoutCancel(ctx))
			var built atomic.Pointer[app.App]
			tel, err := telemetry.New(telemetry.Config{Registry: reg, TracerProvider: tp, Provider: func(m string) string {
				if a := built.Load(); a != nil {
					return a.ModelProvider(m)
				}
				return ""
			}})
			if err != nil {
				return err
			}
			g.opts.Observer = tel
			a, err := g.open(ctx)
			if err != nil {
				return err
			}
			defer a.Close()
			built.Store(a)
			hub, err := a.BuildChannels(log)
			if err != nil {
				return err
			}
			if err := storeGauges(reg, a, hub); err != nil {
				return err
			}
			obs := observability{metrics: telemetry.Handler(reg), streams: func(kind string) server.Gauge { return tel.OpenStreams(kind) },
				headline: func() ([]server.Figure, error) {
					figs, err := telemetry.Headline(reg)
					out := make([]server.Figure, len(figs))
					for i, f := range figs {
						out[i] = server.Figure{Name: f.Name, Value: f.Value}
					}
					return out, err
				}}
			if addr == "" {
				addr = a.Config.Server.Addr
			}
			if addr == "" {
				addr = DefaultAddr
			}
			return serve(ctx, g, a, hub, addr, log, obs)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "address to listen on (default server.addr, else "+DefaultAddr+")")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func newLogger(w interface{ Write([]byte) (int, error) }, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErr("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErr("--log-format %q: want text or json", format)
}

// observability is what the server exposes of the runtime's metrics.
type observability struct {
	metrics  http.Handler
	streams  func(kind string) server.Gauge
	headline func() ([]server.Figure, error)
}

func serve(ctx context.Context, g *globals, a *app.App, hub *channel.Hub, addr string, log *slog.Logger, obs observability) error {
	gw, err := a.NeedGateway()
	if err != nil {
		return err
	}
	keys, err := app.ServerKeys(a.Config)
	if err != nil {
		return err
	}
	tenant := g.tenant
	if tenant == "" {
		tenant = a.Config.Tenant
	}
	sc := a.Config.Server
	cfg := server.Config{Runner: a.Runner, Gateway: gw, Keys: keys, Tenant: tenant, Log: log,
		Limits:    server.Limits{MaxBodyBytes: sc.MaxBodyBytes, MaxJSONDepth: sc.MaxJSONDepth, RequestTimeout: sc.RequestTimeout.Std(), ReadTimeout: sc.ReadTimeout.Std()},
		CORS:      server.CORS{Origins: sc.CORS.AllowedOrigins},
		Heartbeat: sc.Heartbeat.Std(), ClientBuffer: sc.ClientBuffer, WriteTimeout: sc.WriteTimeout.Std(), MaxStreams: sc.MaxStreams,
		Metrics: obs.metrics, Streams: obs.streams, Headline: obs.headline}
	// The browser policy's config (server/origin.go).
	cfg.AllowedHosts, cfg.TrustedProxy = sc.AllowedHosts, sc.TrustedProxy != nil && *sc.TrustedProxy
	cfg.NoUI, cfg.UISecret = sc.UI.Disabled, []byte(sc.UI.Secret)
	cfg.Fetch = server.FetchConfig{AllowedHosts: sc.Fetch.AllowedHosts, Timeout: sc.Fetch.Timeout.Std()}
	for _, n := range sc.Fetch.AllowedNetworks {
		p, err := config.FetchNetwork(n)
		if err != nil {
			return fmt.Errorf("server.fetch.allowed_networks: %w", err)
		}
		cfg.Fetch.AllowedNetworks = append(cfg.Fetch.AllowedNetworks, p)
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	serving := false
	defer func() {
		if !serving {
			// What the adapters started as they were mounted (Server.Go:
			// A2A's pushes) stops before the store closes.
			_ = srv.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	if err := mountProtocols(srv, a, log); err != nil {
		return err
	}
	if hub != nil {
		// The platforms' requests, verified by their channels.
		srv.MountVerified("POST", "/v1/channels/{name}/{path...}", hub.Handler())
		// WhatsApp's webhook verification is a GET.
		srv.MountVerified("GET", "/v1/channels/{name}/{path...}", hub.Handler())
		for _, name := range a.Config.ChannelNames() {
			log.Info("channel", "name", name, "kind", a.Config.Channels[name].Kind, "url", "/v1/channels/"+name+"/events")
		}
	}
	// Every connection holds a file descriptor: raise the limit as far as
	// it goes, and keep half of it for what the turns open (the store,
	// model and tool connections, MCP servers).
	files, hard, err := raiseFileLimit()
	if err != nil {
		log.Warn("could not raise the limit on open files", "limit", files, "hard", hard, "error", err)
	}
	maxConns := sc.MaxConnections
	if maxConns <= 0 {
		maxConns = defaultMaxConnections(files)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return g.listenError(addr, err)
	}
	serving = true
	log.Info("connections", "max_connections", maxConns, "open_files_limit", files, "hard_limit", hard)
	for _, n := range a.Notices {
		log.Info(strings.TrimPrefix(n, "agentrt: "))
	}
	if len(keys) == 0 {
		log.Warn("no API keys configured (server.api_keys): answering only clients on this machine")
	}
	readTimeout := cfg.Limits.ReadTimeout
	if readTimeout <= 0 {
		readTimeout = server.DefaultReadTimeout
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: readTimeout, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if ms, ok := a.Store.(*memstore.Store); ok {
		// Nothing outlives the process, and the sessions are bounded.
		bound := "no bound: it grows with every session"
		if n := ms.MaxSessions(); n > 0 {
			bound = fmt.Sprintf("at most %d; the oldest finished ones are forgotten past that (memory:?max_sessions=N; 0 for no bound)", n)
		}
		log.Warn("the memory store keeps nothing after this process ends; sessions kept: "+bound, "store", a.StoreDSN)
		ms.OnEvict(func(forgotten, kept int) {
			log.Info("memory store full: forgot the oldest finished sessions", "forgotten", forgotten, "kept", kept)
		})
	}
	if !cfg.NoUI {
		// The inspector's address, for a person: open it in a browser.
		log.Info("inspector: open http://" + ln.Addr().String() + "/ui/ in a browser")
	}
	// The line scripts and tests wait for: where to reach the server.
	log.Info("serving", "addr", "http://"+ln.Addr().String(), "store", postgres.Redact(a.StoreDSN), "owner", a.Runner.Owner())

	gctx, stopGateway := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGateway()
	gwDone := make(chan error, 1)
	go func() { gwDone <- a.RunGateway(gctx) }()
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		sweep(gctx, a, log)
	}()
	deliverDone := make(chan struct{})
	go func() {
		defer close(deliverDone)
		if hub != nil {
			_ = hub.Run(gctx) // the outbox, to the channels' platforms
			hub.Close()
		}
	}()
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Serve(server.LimitConnections(hs, ln, maxConns)) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-httpDone:
		serveErr = fmt.Errorf("serve: %w", err)
	case err := <-gwDone:
		serveErr = fmt.Errorf("the gateway stopped: %w", err)
		gwDone <- nil
	}

	// Stop taking work, tell streams to reconnect elsewhere, let runs
	// finish for the grace period, hand the rest over.
	grace := a.Config.Server.ShutdownGrace.Std()
	if grace <= 0 {
		grace = 10 * time.Second
	}
	log.Info("shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	// The listener closes first: a client reconnecting meanwhile is
	// refused its connection, which a browser's EventSource retries,
	// rather than answered 503, after which it gives up.
	httpDown := make(chan struct{})
	go func() {
		defer close(httpDown)
		_ = hs.Shutdown(sctx)
	}()
	_ = srv.Shutdown(sctx)
	<-httpDown
	stopGateway()
	<-gwDone
	<-sweepDone
	<-deliverDone
	if err := a.Runner.Shutdown(sctx); err != nil {
		log.Warn("runs still stopping", "error", err)
	}
	log.Info("stopped")
	return serveErr
}

// defaultMaxConnections is server.max_connections when the config sets
// none: half the limit on open files (unknown: 4096).
func defaultMaxConnections(files uint64) int {
	switch {
	case files == 0:
		return 4096
	case files > 1<<30:
		return 1 << 29
	}
	return max(16, int(files/2))
}

// sweep resumes, every so often with jitter, the runs whose process died
// and the waiting runs whose requests all expired, until ctx ends.
func sweep(ctx context.Context, a *app.App, log *slog.Logger) {
	every := a.Config.Server.SweepEvery.Std()
	if every <= 0 {
		every = a.Config.LeaseTTL.Std()
	}
	if every <= 0 {
		every = agentrt.DefaultLeaseTTL
	}
	sw := &agentrt.Sweeper{Runner: a.Runner, Every: every, Report: func(err error) { log.Warn("recovery sweep", "error", err) },
		Resumed: func(h *agentrt.Run) {
			log.Info("resumed a run whose process stopped", "session", h.SessionID(), "tenant", h.Tenant(), "run", h.ID())
		}}
	if err := sw.Run(ctx); err != nil {
		log.Warn("recovery sweeps stopped", "error", err)
	}
}

func newKeysCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "make API keys for agentrt serve"}
	var tenant, principal, file string
	var rate float64
	var burst int
	newCmd := &cobra.Command{
		Use:   "new --tenant T [--principal P] [--file F]",
		Short: "make an API key: print it once, and add its hash to the keys file (server.api_keys_file)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := session.CheckTenant(tenant); err != nil {
				return usageErr("--tenant: %v", err)
			}
			if file == "" {
				cfg, err := g.loadConfig()
				if err != nil {
					return err
				}
				file = cfg.Server.APIKeysFile
			}
			if file == "" {
				return usageErr("no keys file: give --file, or set server.api_keys_file in the config")
			}
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			key := "art_" + base64.RawURLEncoding.EncodeToString(b)
			if err := app.AppendKeysFile(file, app.FileKey{Hash: server.HashKey(key), Tenant: tenant, Principal: principal, Rate: rate, Burst: burst}); err != nil {
				return err
			}
			fmt.Fprintln(g.s.Out, key)
			fmt.Fprintf(g.s.Err, "agentrt: a key for tenant %s; its hash is in %s. The key is not kept anywhere: store it now.\n", tenant, file)
			return nil
		},
	}
	newCmd.Flags().StringVar(&tenant, "tenant", "", "the tenant the key reaches (required)")
	newCmd.Flags().StringVar(&principal, "principal", "", "who holds the key (recorded as who decided)")
	newCmd.Flags().StringVar(&file, "file", "", "the keys file (default server.api_keys_file)")
	newCmd.Flags().Float64Var(&rate, "rate", 0, "requests per second the key may make (0: no limit)")
	newCmd.Flags().IntVar(&burst, "burst", 0, "requests at once (default: the rate)")
	hashCmd := &cobra.Command{
		Use:   "hash KEY",
		Short: "print a key's hash, for server.api_keys[].hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(g.s.Out, server.HashKey(args[0]))
			return nil
		},
	}
	cmd.AddCommand(newCmd, hashCmd)
	return cmd
}

// storeGauges registers the gauges read at each scrape: the requests
// waiting for a person and the inputs waiting in the inbox, of every
// tenant (from the store), and the gateway's abandoned modules.
// The helps of the channels' counters.
const (
	channelRequestsHelp   = "What the channels' platforms sent, by outcome: messages and presses received, requests refused (a bad signature, a sender not allowed), events ignored (edits, joins, unknown types), duplicates (a platform's retries)."
	channelDeliveriesHelp = "Messages sent to the channels' platforms from the outbox, by outcome: delivered, retried later, failed (given up)."
)

func storeGauges(reg prometheus.Registerer, a *app.App, hub *channel.Hub) error {
	if ri, ok := a.Store.(session.RequestIndex); ok {
		err := telemetry.GaugeFunc(reg, "pending_requests", "Requests waiting for a person, every tenant's.", 0,
			func(ctx context.Context) (float64, error) {
				n, err := ri.CountRequests(ctx)
				return float64(n), err
			})
		if err != nil {
			return err
		}
	}
	if a.Gateway != nil {
		gw := a.Gateway
		gauges := []struct {
			name, help string
			fn         func() int
		}{
			{"gateway_modules_abandoned", "Gateway modules given up on that still run: they ignored their context past their time limit or the shutdown grace.", gw.Abandoned},
			{"gateway_workers_busy", "Sources the gateway serves now: turns running, or waiting for their source to settle (at most gateway.workers).", gw.Busy},
			{"gateway_sources_waiting", "Sources with pending inputs that waited for a free gateway worker at the gateway's last look at the inbox.", gw.Waiting},
		}
		for _, gg := range gauges {
			err := telemetry.GaugeFunc(reg, gg.name, gg.help, 0, func(context.Context) (float64, error) { return float64(gg.fn()), nil })
			if err != nil {
				return err
			}
		}
	}
	if ms, ok := a.Store.(*memstore.Store); ok {
		err := telemetry.GaugeFunc(reg, "memory_sessions_forgotten", "Sessions the memory store forgot to stay within its bound (memory:?max_sessions).", 0,
			func(context.Context) (float64, error) { return float64(ms.Evicted()), nil })
		if err != nil {
			return err
		}
	}
	if hub != nil {
		// What the channels' platforms sent, and what was delivered to them.
		for _, c := range []struct {
			name, help, outcome string
			count               func(channel.Counts) int64
		}{
			{"channel_requests_total", channelRequestsHelp, "received", func(c channel.Counts) int64 { return c.Received }},
			{"channel_requests_total", channelRequestsHelp, "refused", func(c channel.Counts) int64 { return c.Refused }},
			{"channel_requests_total", channelRequestsHelp, "ignored", func(c channel.Counts) int64 { return c.Ignored }},
			{"channel_requests_total", channelRequestsHelp, "duplicate", func(c channel.Counts) int64 { return c.Duplicates }},
			{"channel_deliveries_total", channelDeliveriesHelp, "delivered", func(c channel.Counts) int64 { return c.Delivered }},
			{"channel_deliveries_total", channelDeliveriesHelp, "retried", func(c channel.Counts) int64 { return c.Retried }},
			{"channel_deliveries_total", channelDeliveriesHelp, "failed", func(c channel.Counts) int64 { return c.Failed }},
		} {
			err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "agentrt", Name: c.name, Help: c.help,
				ConstLabels: prometheus.Labels{"outcome": c.outcome}}, func() float64 { return float64(c.count(hub.Counts())) }))
			if err != nil {
				return err
			}
		}
	}
	if ib, ok := a.Store.(session.Inbox); ok {
		err := telemetry.GaugeFunc(reg, "inbox_depth", "Inputs waiting in the gateway's inbox, every tenant's.", 0,
			func(ctx context.Context) (float64, error) {
				states, err := ib.PendingSources(ctx, 0)
				n := 0
				for _, s := range states {
					n += s.Pending
				}
				return float64(n), err
			})
		if err != nil {
			return err
		}
	}
	return nil
}
