// Package app wires an agentrt.yaml into a running runtime: the store, the
// models, the tools, the agents and the Runner. The CLI and the server use it.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/memory/pgmem"
	"github.com/agentrt/agentrt/memory/sqlitemem"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
	"github.com/agentrt/agentrt/tool/mcptool"
)

// Options says where the configuration comes from.
type Options struct {
	// ConfigPath is the config file; "" means ./agentrt.yaml if present,
	// else the built-in defaults.
	ConfigPath string
	// StoreDSN overrides the config's store.
	StoreDSN string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ExtraTools are added to the built-in tools (tests and embedders).
	ExtraTools []tool.Tool
	// Models override or add models by name (tests and embedders).
	Models map[string]model.Model
	// Getenv reads the environment (model selection, timeouts); nil means
	// os.Getenv.
	Getenv func(string) string
	// OllamaURL is where to look for a local Ollama; "" means OLLAMA_HOST,
	// else DefaultOllamaURL.
	OllamaURL string
	// HTTPClient, when set, sends the providers' requests (tests, proxies).
	// The app does not close its idle connections: its owner does.
	HTTPClient *http.Client
	// OnMCPToolsChanged, when set, hears of each change of an MCP server's
	// tools: err is nil once the new list has reached the agents, else why
	// it could not be read or applied (the agents keep the list they had).
	// It is called on a goroutine of the app's, one call at a time per
	// server, and must not block: Close waits for it.
	OnMCPToolsChanged func(server string, err error)
	// GatewayModules are added to the gateway's module pipeline (see
	// gateway.Module); GatewayOnError hears of the failures of its turns
	// that nobody's call returns (gateway.Config.OnError).
	GatewayModules []gateway.Module
	GatewayOnError func(source string, err error)
	// GatewayOnFull hears that sources wait for a free gateway worker
	// (gateway.Config.OnFull).
	GatewayOnFull func(busy, waiting int)
	// Observer, when set, hears of every commit and the end of every run
	// (agentrt.Config.Observer): the server's metrics and traces.
	Observer agentrt.Observer
	// ReadOnly says the caller only reads sessions (listing, showing):
	// a SQLite database this process may not write is then opened
	// read-only, and the agents' memory is not opened, rather than
	// refusing to start.
	ReadOnly bool
	// Engine builds the engine of engine: temporal (the temporal
	// module's agentrt binary sets it): the runner hands its runs to it.
	// Its close ends what it opened (a client's connection).
	Engine func(ctx context.Context, cfg *config.Config) (eng agentrt.Engine, close func() error, err error)
	// Worker, when set, says the app is an engine's worker (agentrt
	// worker): its runner steps the runs itself, with no engine, and no
	// gateway is built.
	Worker bool
	// RunWorker runs the engine's worker over the app until ctx ends
	// (agentrt worker; the temporal module's binary sets it).
	RunWorker func(ctx context.Context, a *App) error
}

// App is a configured runtime, built to run for as long as its owner
// needs: a server builds one and keeps it for weeks. Whatever Build
// started or opened (MCP servers' processes and connections, the store,
// the memory, the providers' connections, the runner's runs, the
// gateway's loop) is ended by
// Close, which may be called more than once; a Build that fails ends it
// before it returns.
type App struct {
	Config *config.Config
	Store  session.Store
	Runner *agentrt.Runner
	Tools  *tool.Registry
	// Notices are one-line messages for the user (e.g. which model was
	// chosen by default), each once: all of them, for a command that runs
	// every agent (serve, gateway). NoticesFor has those of one agent.
	Notices []string
	// modelNotices are the notices of building each model of the config,
	// by its name; agentModels the models each agent uses, and subAgents
	// the agents it delegates to (NoticesFor). Written by Build only.
	modelNotices map[string][]string
	agentModels  map[string][]string
	subAgents    map[string][]string

	// StoreDSN is the store the app opened (the config's, or the
	// override).
	StoreDSN string
	// Memory is the agents' memory, when one has it (nil otherwise).
	Memory memory.Store
	// MCP holds the connections to the configured MCP servers (nil when
	// there are none).
	MCP *mcptool.Manager
	// Gateway is how input from the outside world enters a session
	// (agentrt send, agentrt run); nil when the store keeps no inbox.
	// RunGateway runs its loop.
	Gateway *gateway.Gateway
	// opts are what Build was given (BuildChannels builds with them).
	opts Options

	// built: Build is done; a model built later (configModels) says
	// nothing (the notices are read by then, and not guarded).
	built bool

	memMu sync.Mutex // serializes OpenMemory

	mu sync.Mutex
	// undo holds what ends each thing the app started, in the order it
	// started them: Close runs them last first. Guarded by mu.
	undo   []func() error
	closed bool // guarded by mu

	closeOnce sync.Once
	providers sync.Map // model name → provider, for traces
	closeErr  error
}

// errClosed is the error of an App's method called after Close.
var errClosed = errors.New("app: closed")

// onClose has Close run f, before whatever was added earlier. Build
// calls it for each thing it starts, as soon as it has started it, so
// that a Build that fails ends them all.
func (a *App) onClose(f func() error) {
	if err := a.tryOnClose(f); err != nil {
		panic("app: onClose after Close") // Build's own: the app is not handed out yet
	}
}

// tryOnClose is onClose for a method of a built app, which may run after
// Close: then it runs f at once and fails.
func (a *App) tryOnClose(f func() error) error {
	a.mu.Lock()
	if !a.closed {
		a.undo = append(a.undo, f)
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()
	return errors.Join(errClosed, f())
}

// LoadConfig loads the config named by opts (or the defaults).
func LoadConfig(opts Options) (*config.Config, error) {
	path := opts.ConfigPath
	if path == "" {
		if _, err := os.Stat("agentrt.yaml"); err == nil {
			path = "agentrt.yaml"
		}
	}
	if path == "" {
		return config.Default(), nil
	}
	return config.Load(path)
}

// Open loads the config, opens the store and builds the runner.
func Open(ctx context.Context, opts Options) (*App, error) {
	cfg, err := LoadConfig(opts)
	if err != nil {
		return nil, err
	}
	return Build(ctx, cfg, opts)
}

// Tools returns the tools every agent can choose from.
func Tools(opts Options) (*tool.Registry, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return tool.NewRegistry(append(builtin.All(now), opts.ExtraTools...)...)
}

// Check validates cfg beyond what parsing checks, as a run needs it: the
// strategies are built, every tool pattern matches a tool, and the models
// the agents use can be built here (their api_key is set).
func Check(cfg *config.Config, opts Options) error {
	var names []string
	for _, n := range cfg.AgentNames() {
		names = append(names, cfg.Agents[n].Models()...)
	}
	return check(cfg, opts, names) // none: CheckModels checks them all
}

// CheckAll is Check of every model in the file, used or not (a model kept
// for later must work too): agentrt config check.
func CheckAll(cfg *config.Config, opts Options) error {
	return check(cfg, opts, cfg.ModelNames())
}

func check(cfg *config.Config, opts Options, models []string) error {
	reg, err := Tools(opts)
	if err != nil {
		return err
	}
	return errors.Join(
		cfg.CheckA2AAgents(func(name string) bool { _, ok := reg.Get(name); return ok }),
		cfg.CheckStrategies(config.StrategyReact, config.StrategyPlanExecute),
		cfg.CheckTools(func(p string) bool {
			if mcpServerOf(cfg, p) != "" {
				return true // an MCP server's: known once it is connected (agentrt mcp check)
			}
			_, err := reg.Filter([]string{p})
			return err == nil
		}, reg.Names()...),
		cfg.CheckModels(models...),
	)
}

// Build opens the store and builds the runner for cfg. When it fails, it
// has ended whatever it had started (an MCP server's process, the store).
func Build(ctx context.Context, cfg *config.Config, opts Options) (_ *App, err error) {
	a := &App{Config: cfg, modelNotices: map[string][]string{}, agentModels: map[string][]string{}, subAgents: map[string][]string{}}
	defer func() {
		if err != nil {
			_ = a.Close() // the error that stopped Build is the one to report
		}
	}()
	reg, err := Tools(opts)
	if err != nil {
		return nil, err
	}
	a.Tools = reg
	if err := Check(cfg, opts); err != nil {
		return nil, err
	}
	if err := a.addMCPTools(ctx, cfg); err != nil {
		return nil, err
	}
	remotes, err := a2aTools(cfg)
	if err != nil {
		return nil, err
	}
	if err := reg.Add(remotes...); err != nil {
		return nil, err
	}
	if err := a.recordTraffic(&opts); err != nil {
		return nil, err
	}
	models := map[modelKey]model.Model{}
	var agents []*agentrt.Agent
	var remember []agentMemory // the agents with a memory
	for _, name := range cfg.AgentNames() {
		ac := cfg.Agents[name]
		t, err := timeouts(ac, opts)
		if err != nil {
			return nil, err
		}
		a.agentModels[name] = append(ac.Models(), ac.Compaction.Model, ac.Plan.Summarizer)
		m, err := a.buildModel(ctx, cfg, ac.Model, t, models, opts)
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", name, err)
		}
		var fallbacks []model.Model
		for _, fname := range ac.FallbackModels {
			fm, err := a.buildModel(ctx, cfg, fname, t, models, opts)
			if err != nil {
				return nil, fmt.Errorf("agent %q: fallback %w", name, err)
			}
			fallbacks = append(fallbacks, fm)
		}
		var summariser model.Model
		if ac.Compaction.Model != "" {
			if summariser, err = a.buildModel(ctx, cfg, ac.Compaction.Model, t, models, opts); err != nil {
				return nil, fmt.Errorf("agent %q: compaction %w", name, err)
			}
		}
		b := agentrt.NewAgent(name).
			Profile(agentrt.Profile(ac.Profile)).
			Instructions(ac.Instructions).
			Description(ac.Description).
			Model(m).
			Fallbacks(fallbacks...).
			Models(&configModels{a: a, cfg: cfg, t: t, opts: opts, built: map[modelKey]model.Model{}}).
			Registry(reg).
			ToolFilter(ac.Tools...).
			Limits(agentrt.Limits{
				MaxRounds: ac.Limits.MaxRounds, MaxSteps: ac.Limits.MaxSteps,
				MaxTokens: ac.Limits.MaxTokens, MaxCostUSD: ac.Limits.MaxCostUSD,
				SessionMaxTokens: ac.Limits.SessionMaxTokens, SessionMaxCostUSD: ac.Limits.SessionMaxCostUSD,
				MaxTurnDuration: ac.Limits.MaxTurnDuration.Std(),
			}).
			Compaction(agentrt.Compaction{Off: ac.Compaction.Off, MaxMessages: ac.Compaction.MaxMessages, MaxChars: ac.Compaction.MaxChars,
				MaxTokens: ac.Compaction.MaxTokens, KeepRecent: ac.Compaction.KeepRecent, Model: summariser}).
			LoopDetection(agentrt.LoopDetection{Warning: ac.LoopDetection.Warning, Critical: ac.LoopDetection.Critical,
				Off: ac.LoopDetection.Off != nil && *ac.LoopDetection.Off}).
			Approval(agentrt.ApprovalPolicy{
				Default:           tool.Approval(ac.Approval.Default),
				Ask:               ac.Approval.Ask,
				Deny:              ac.Approval.Deny,
				Expires:           ac.Approval.Expires.Std(),
				ExpiresFor:        expiresFor(ac.Approval.ExpiresFor),
				AutoWhenDelegated: ac.Approval.AutoWhenDelegated != nil && *ac.Approval.AutoWhenDelegated,
			})
		if len(ac.Tools) == 0 {
			b.Registry(nil)
		}
		if ac.Strategy == config.StrategyPlanExecute {
			pe := agentrt.PlanExecute{MaxSteps: ac.Plan.MaxSteps, Replan: ac.Plan.Replan == "on_failure",
				StructuredOutput: ac.Plan.StructuredOutput != nil && *ac.Plan.StructuredOutput}
			switch ac.Plan.Summarizer {
			case "", config.SummarizerModel: // the agent's model
			case config.SummarizerTemplate:
				pe.SummaryTemplate = true
			default:
				if pe.Summarizer, err = a.buildModel(ctx, cfg, ac.Plan.Summarizer, t, models, opts); err != nil {
					return nil, fmt.Errorf("agent %q: plan summarizer %w", name, err)
				}
			}
			b.Policy(pe)
		}
		for _, t := range ac.Tools {
			if _, isAgent := cfg.Agents[t]; isAgent {
				b.Tools(agentrt.SubAgent(t, cfg.Agents[t].Description)) // another agent, as a tool
				a.subAgents[name] = append(a.subAgents[name], t)
			}
		}
		ra, err := b.Build()
		if err != nil {
			return nil, err
		}
		if err := toolTimeouts(ra, ac.Timeouts); err != nil {
			return nil, fmt.Errorf("agent %q: %w", name, err)
		}
		ra.NoStream = ac.Stream != nil && !*ac.Stream
		agents = append(agents, ra)
		if ac.Memory.On() {
			remember = append(remember, agentMemory{ra, ac.Memory.RememberTurns != nil && *ac.Memory.RememberTurns})
		}
	}
	dsn := cfg.Store
	if opts.StoreDSN != "" {
		dsn = opts.StoreDSN
	}
	var st session.Store
	readOnly := false
	if opts.ReadOnly {
		st, readOnly, err = openReading(ctx, dsn)
	} else {
		st, err = OpenStore(ctx, dsn)
	}
	if err != nil {
		return nil, err
	}
	a.onClose(st.Close)
	a.StoreDSN = dsn
	if len(remember) > 0 && !readOnly {
		// The agents' memory lives in the sessions' database.
		m, err := a.OpenMemory(ctx)
		if err != nil {
			return nil, err
		}
		for _, am := range remember {
			am.agent.Memory, am.agent.RememberTurns = m, am.turns
		}
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	rc := agentrt.Config{Store: st, Agents: agents, Now: opts.Now, Observer: opts.Observer,
		Owner: getenv("AGENTRT_OWNER"), LeaseTTL: cfg.LeaseTTL.Std(), MaxRecoveries: cfg.MaxRecoveries,
		ControlPoll: cfg.ControlPoll.Std(), DefaultAgent: cfg.DefaultAgentName}
	if names := cfg.ChannelNames(); len(names) > 0 && !readOnly {
		// The channels' conversations are owed their answers (the outbox).
		rc.Deliver = channel.Owns(names...)
	}
	if cfg.Engine == config.EngineTemporal && opts.Worker {
		rc.EngineName = config.EngineTemporal // the runs it steps are Temporal's
	}
	if cfg.Engine == config.EngineTemporal && !readOnly {
		// agentrt serve hands its runs to the engine; a worker, which
		// steps them, hands it the sub-agents' runs that start in a step.
		if opts.Engine == nil {
			return nil, errors.New(cfg.Problemf("engine", "temporal needs the agentrt built with Temporal (the temporal module's: github.com/agentrt/agentrt/temporal/cmd/agentrt); this agentrt runs every run in its own process").String())
		}
		eng, closeEng, err := opts.Engine(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("engine temporal: %w", err)
		}
		a.onClose(closeEng)
		rc.Engine = eng
	}
	r, err := agentrt.NewRunner(rc)
	if err != nil {
		return nil, err
	}
	a.onClose(func() error {
		// The runs the runner started in the background stop before the
		// store they write to closes.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return r.Close(ctx)
	})
	a.Store, a.Runner = st, r
	if !opts.Worker {
		if err := a.buildGateway(cfg, opts); err != nil {
			return nil, err
		}
	}
	a.followMCPTools(cfg, opts.OnMCPToolsChanged)
	a.built, a.opts = true, opts
	return a, nil
}

// NoticesFor returns the notices that concern a run of agent: those of
// the models it and the agents it delegates to use (so "no model found;
// using the offline demo model" only when one of them is auto and found
// none), and those of the app (recording provider traffic), in the order
// they were said.
func (a *App) NoticesFor(agent string) []string {
	concern := map[string]bool{}
	seen := map[string]bool{}
	var visit func(string)
	visit = func(ag string) {
		if seen[ag] {
			return
		}
		seen[ag] = true
		for _, m := range a.agentModels[ag] {
			for _, n := range a.modelNotices[m] {
				concern[n] = true
			}
		}
		for _, sub := range a.subAgents[ag] {
			visit(sub)
		}
	}
	visit(agent)
	ofModels := map[string]bool{}
	for _, ns := range a.modelNotices {
		for _, n := range ns {
			ofModels[n] = true
		}
	}
	var out []string
	for _, n := range a.Notices {
		if concern[n] || !ofModels[n] {
			out = append(out, n)
		}
	}
	return out
}

// OpenMemory returns the memory store of the app's database: the one its
// agents use, or a new one (closed with the app).
func (a *App) OpenMemory(ctx context.Context) (memory.Store, error) {
	a.memMu.Lock()
	defer a.memMu.Unlock()
	if a.Memory != nil {
		return a.Memory, nil
	}
	m, closeFn, err := OpenMemory(ctx, a.StoreDSN)
	if err != nil {
		return nil, err
	}
	if err := a.tryOnClose(closeFn); err != nil {
		return nil, err // closed meanwhile: it is closed again
	}
	a.Memory = m
	return m, nil
}

// agentMemory is an agent that has a memory, and whether it remembers its
// turns.
type agentMemory struct {
	agent *agentrt.Agent
	turns bool
}

// OpenMemory opens the memory store in the database of a sessions' DSN:
// SQLite FTS5 beside a SQLite store, Postgres full-text search beside a
// Postgres one, in memory beside memory:. close closes it.
func OpenMemory(ctx context.Context, dsn string) (m memory.Store, close func() error, err error) {
	switch {
	case dsn == "memory:" || dsn == "memory" || strings.HasPrefix(dsn, "memory:?"):
		return memory.NewInMemory(), func() error { return nil }, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s, err := pgmem.Open(ctx, dsn)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	s, err := sqlitemem.Open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// DefaultMemorySessions bounds the sessions of the memory store
// (memory:): some 18 KB each after a turn, so 10,000 hold about 180 MB.
// memory:?max_sessions=N sets another bound; 0, none.
const DefaultMemorySessions = 10000

// openMemory opens the memory store of dsn: memory:, or
// memory:?max_sessions=N.
func openMemory(dsn string) (*memstore.Store, error) {
	n := DefaultMemorySessions
	if _, q, ok := strings.Cut(dsn, "?"); ok {
		vals, err := url.ParseQuery(q)
		if err != nil {
			return nil, fmt.Errorf("store: %q: %w", dsn, err)
		}
		for k := range vals {
			if k != "max_sessions" {
				return nil, fmt.Errorf("store: %q: unknown parameter %q (memory: takes max_sessions)", dsn, k)
			}
		}
		v := vals.Get("max_sessions")
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return nil, fmt.Errorf("store: %q: max_sessions must be a whole number, 0 for no bound; got %q", dsn, v)
		}
	}
	return memstore.New(memstore.WithMaxSessions(n, nil)), nil
}

// keywordDSN matches a libpq key=value connection string.
var keywordDSN = regexp.MustCompile(`(^|\s)(host|hostaddr|port|dbname|user|password|sslmode)=`)

// OpenStore opens a store from a DSN: sqlite:PATH, postgres://…,
// memory:, or a bare path (SQLite).
func OpenStore(ctx context.Context, dsn string) (session.Store, error) {
	switch {
	case dsn == "memory:" || dsn == "memory" || strings.HasPrefix(dsn, "memory:?"):
		return openMemory(dsn)
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgres.Open(ctx, dsn)
	case strings.HasPrefix(dsn, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "file:"):
		return sqlite.Open(ctx, dsn) // a SQLite URI, which sqlite.Open takes as it is
	case dsn == "":
		return nil, errors.New("store: empty DSN")
	}
	if keywordDSN.MatchString(dsn) {
		// Not a file name: it would put the password in one.
		return nil, fmt.Errorf("store: %q looks like a key=value Postgres DSN; write it as postgres://USER:PASSWORD@HOST:PORT/DBNAME", postgres.Redact(dsn))
	}
	if i := strings.Index(dsn, ":"); i > 1 && isScheme(dsn[:i]) {
		// "sqllite:x" is a typo, not a file to create.
		return nil, fmt.Errorf("store: unknown scheme %q in %q (use sqlite:PATH, postgres://…, memory: or a file path)", dsn[:i], postgres.Redact(dsn))
	}
	return sqlite.Open(ctx, dsn)
}

// OpenReading opens the store of dsn for a caller that only reads
// sessions (listing them, completing their ids): a SQLite file that does
// not exist is an empty store, so that nothing is created, and a SQLite
// database this process may not write is opened read-only.
func OpenReading(ctx context.Context, dsn string) (session.Store, error) {
	st, _, err := openReading(ctx, dsn)
	return st, err
}

// openReading is OpenReading; readOnly reports whether the store it
// opened refuses writes (an empty stand-in, or SQLite read-only).
func openReading(ctx context.Context, dsn string) (st session.Store, readOnly bool, err error) {
	if path, ok := sqliteFile(dsn); ok && !exists(path) {
		// Nothing to read, and a reader creates nothing (agentrt sessions
		// list in an empty directory): an empty store stands in.
		return memstore.New(), true, nil
	}
	st, err = OpenStore(ctx, dsn)
	if err != nil && errors.Is(err, sqlite.ErrReadOnly) {
		// OpenStore opened dsn as SQLite: a path, sqlite:PATH or file:URI.
		st, err = sqlite.Open(ctx, strings.TrimPrefix(dsn, "sqlite:"), sqlite.ReadOnly())
		return st, true, err
	}
	return st, false, err
}

// sqliteFile returns the file of a SQLite DSN that names one (a path, or
// sqlite:PATH); ok is false for any other store, and for a file: URI.
func sqliteFile(dsn string) (path string, ok bool) {
	switch {
	case dsn == "" || dsn == "memory:" || dsn == "memory" || strings.HasPrefix(dsn, "memory:?") || strings.HasPrefix(dsn, "file:") ||
		strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		return "", false
	case strings.HasPrefix(dsn, "sqlite:"):
		return strings.TrimPrefix(dsn, "sqlite:"), true
	case keywordDSN.MatchString(dsn):
		return "", false
	}
	if i := strings.Index(dsn, ":"); i > 1 && isScheme(dsn[:i]) {
		return "", false
	}
	return dsn, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func isScheme(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Close ends what the app started, last started first: it stops the
// gateway's loop (RunGateway) and waits for its workers, then the runs
// the runner started in the background, then closes the memory and the
// store, the providers' idle connections, a recording (which writes it),
// and the MCP servers (their processes end, and the goroutines that
// followed their tool lists). It may be called more than once, also
// concurrently: every call returns the first one's result once it is
// done.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		undo := a.undo
		a.undo, a.closed = nil, true
		a.mu.Unlock()
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

func expiresFor(m map[string]config.Duration) map[string]time.Duration {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]time.Duration, len(m))
	for k, v := range m {
		out[k] = v.Std()
	}
	return out
}

// toolTimeouts applies an agent's timeouts.tool and timeouts.tools to its
// registry, which is its own (filtered from the shared one).
func toolTimeouts(a *agentrt.Agent, t config.Timeouts) error {
	if a.Tools == nil {
		if len(t.Tools) > 0 {
			return fmt.Errorf("timeouts.tools: the agent has no tools")
		}
		return nil
	}
	if t.Tool > 0 {
		a.Tools.SetDefaultTimeout(t.Tool.Std())
	}
	names := make([]string, 0, len(t.Tools))
	for n := range t.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := a.Tools.SetTimeout(n, t.Tools[n].Std()); err != nil {
			return fmt.Errorf("timeouts.tools: %w", err)
		}
	}
	return nil
}

// NewMCP returns a Manager for the config's mcp_servers (nil for none).
func NewMCP(cfg *config.Config) (*mcptool.Manager, error) {
	if len(cfg.MCPServers) == 0 {
		return nil, nil
	}
	var servers []mcptool.Server
	for _, name := range cfg.MCPServerNames() {
		s := cfg.MCPServers[name]
		servers = append(servers, mcptool.Server{Name: name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
			URL: s.URL, Headers: s.Headers, Timeout: s.Timeout.Std()})
	}
	return mcptool.New(servers, cfg.MCPSeparator)
}

// mcpServerOf returns the MCP server a tool name or pattern of the config
// belongs to ("fs" for "fs.*" or "fs.read_file"), or "".
func mcpServerOf(cfg *config.Config, pattern string) string {
	sep := cfg.MCPSeparator
	if sep == "" {
		sep = "."
	}
	name, _, ok := strings.Cut(pattern, sep)
	if _, isServer := cfg.MCPServers[name]; ok && isServer {
		return name
	}
	return ""
}

// addMCPTools connects to the MCP servers the agents use (their tools or
// approval patterns name them) and adds their tools to a.Tools. A server
// no agent uses is not started.
func (a *App) addMCPTools(ctx context.Context, cfg *config.Config) error {
	m, err := NewMCP(cfg)
	if err != nil || m == nil {
		return err
	}
	a.MCP = m
	a.onClose(m.Close)
	used := map[string]bool{}
	for _, name := range cfg.AgentNames() {
		ac := cfg.Agents[name]
		for _, p := range slices.Concat(ac.Tools, ac.Approval.Ask, ac.Approval.Deny) {
			if s := mcpServerOf(cfg, p); s != "" {
				used[s] = true
			}
		}
	}
	for _, s := range m.Names() {
		if !used[s] {
			continue
		}
		ts, err := m.Tools(ctx, s)
		if err != nil {
			return err
		}
		if err := a.Tools.Add(ts...); err != nil {
			return fmt.Errorf("mcp server %q: %w", s, err)
		}
	}
	return nil
}

// followMCPTools keeps the tool lists of the app and its agents up to
// date with their MCP servers': a tool a server adds is in the next model
// request of each agent whose tool patterns match it, and a tool it
// removes leaves them (a call of it is then an unknown tool's error, for
// the model to read). The agents work out their specs and approvals again
// only when their registry changed (agentrt.Agent.ToolSpecs). hook, if
// set, hears of each change.
func (a *App) followMCPTools(cfg *config.Config, hook func(server string, err error)) {
	if a.MCP == nil {
		return
	}
	type follower struct {
		reg  *tool.Registry
		keep func(name string) bool // nil: every tool
	}
	followers := []follower{{reg: a.Tools}}
	for _, name := range cfg.AgentNames() {
		ag, ok := a.Runner.Agent(name)
		patterns := cfg.Agents[name].Tools
		if !ok || ag.Tools == nil || len(patterns) == 0 {
			continue // no tools: none to follow
		}
		followers = append(followers, follower{reg: ag.Tools, keep: func(n string) bool {
			return slices.ContainsFunc(patterns, func(p string) bool { return tool.Match(p, n) })
		}})
	}
	var mu sync.Mutex // one server's change at a time, through every registry
	a.MCP.OnToolsChanged(func(server string, ts []tool.Tool, err error) {
		if err == nil {
			mu.Lock()
			for _, f := range followers {
				err = errors.Join(err, mcptool.Sync(f.reg, server, ts, f.keep))
			}
			mu.Unlock()
		}
		if hook != nil {
			hook(server, err)
		}
	})
}
