package config

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// DefaultFile is the config file the CLI reads when --config is not given.
const DefaultFile = "agentrt.yaml"

// DefaultStore is the store used when the config names none.
const DefaultStore = "sqlite:.agentrt/agentrt.db"

// DefaultMaxRounds is the round limit of an agent whose limits.max_rounds is
// unset or zero.
const DefaultMaxRounds = 10

// DefaultMaxInputBytes is MaxInputBytes when the config leaves it out or
// sets it to 0: 1 MiB, some 250,000 tokens of text, more than most models
// take in one request.
const DefaultMaxInputBytes = 1 << 20

// DefaultAgent is the name of the agent that exists when the config defines
// no agents.
const DefaultAgent = "assistant"

// Strategies an agent may use. The empty strategy means StrategyReact.
const (
	StrategyReact       = "react"
	StrategyPlanExecute = "plan_execute"
)

// Summarizers of plan.summarizer besides a model's name.
const (
	SummarizerModel    = "model"
	SummarizerTemplate = "template"
)

// Approval defaults an agent may name. The empty default lets each tool's
// own policy decide, then auto.
const (
	ApprovalAuto = "auto"
	ApprovalAsk  = "ask"
	ApprovalDeny = "deny"
)

// Config is a parsed, validated agentrt.yaml.
//
// The yaml tags let a Config be written back out with yaml.Marshal; values
// are written expanded, so secrets taken from the environment appear in the
// output. Read a file with Load or Parse, never with yaml.Unmarshal, which
// skips expansion and validation.
//
// No method modifies a Config, so one may be shared by goroutines as long
// as none of them writes to it.
type Config struct {
	// Store is the session store's DSN: sqlite:PATH, postgres://…,
	// postgresql://… or memory:. Parse also accepts a bare memory, since
	// YAML wants memory: quoted, and stores it as memory:.
	Store string `yaml:"store,omitempty"`
	// Tenant is the tenant the CLI works in when --tenant is not given;
	// empty means "default".
	Tenant string `yaml:"tenant,omitempty"`
	// LeaseTTL is how long a session's lease lasts unless renewed: how
	// long a crashed process holds its sessions (zero: the runtime's
	// default, 30s). A process on the same host sees a dead owner at once.
	LeaseTTL Duration `yaml:"lease_ttl,omitempty"`
	// MaxRecoveries is how often a session may be resumed after its
	// process stopped without progress before it is failed (crash_loop);
	// zero means the runtime's default, 3.
	MaxRecoveries int `yaml:"max_recoveries,omitempty"`
	// DefaultAgentName is the agent a session belongs to when a command
	// names none (agentrt run without --agent); empty means the agent
	// named assistant, or the only agent.
	DefaultAgentName string `yaml:"default_agent,omitempty"`
	// ControlPoll is how often a process running sessions looks for the
	// control requests (agentrt cancel) other processes made to it: how
	// long, at most, before it acts on one (zero: the runtime's default,
	// 500ms).
	ControlPoll Duration `yaml:"control_poll,omitempty"`
	// MaxInputBytes is the largest input the CLI takes for a turn (its
	// TEXT, or what stdin holds with -); zero means DefaultMaxInputBytes
	// (see InputLimit). Stdin is read through a limit, so a larger input is
	// refused without being held in memory.
	MaxInputBytes int64                `yaml:"max_input_bytes,omitempty"`
	Models        map[string]Model     `yaml:"models,omitempty"`
	MCPServers    map[string]MCPServer `yaml:"mcp_servers,omitempty"`
	// MCPSeparator joins a server's name and its tools' ("." when empty):
	// server fs's read_file is fs.read_file.
	MCPSeparator string `yaml:"mcp_separator,omitempty"`
	// A2AAgents are remote agents reached over A2A: an agent that lists
	// one's name in its tools delegates to it as to a sub-agent.
	A2AAgents map[string]A2AAgent `yaml:"a2a_agents,omitempty"`
	Agents    map[string]Agent    `yaml:"agents,omitempty"`
	Server    Server              `yaml:"server,omitempty"`
	// Gateway configures the gateway: how input from the outside world
	// (agentrt send, the server's transports) becomes turns.
	Gateway Gateway `yaml:"gateway,omitempty"`
	// Channels put agents on chat platforms (docs/channels.md): each is
	// served by agentrt serve at /v1/channels/NAME/.
	Channels map[string]Channel `yaml:"channels,omitempty"`
	// Engine is where runs run: EngineLocal (empty), in the processes
	// that start them; EngineTemporal, on a Temporal cluster's workers
	// (agentrt worker; docs/temporal.md), configured by Temporal.
	Engine   string   `yaml:"engine,omitempty"`
	Temporal Temporal `yaml:"temporal,omitempty"`

	file  string              // name given to Parse; "" for Default
	pos   map[string]Position // key path -> where it is written
	unset map[string][]string // key path -> ${VARS} that were not set
}

// Model is one entry of models: a provider and how to reach it.
type Model struct {
	// Provider is one of Providers().
	Provider string `yaml:"provider"`
	// Model is the provider's model name, e.g. gpt-4o-mini.
	Model   string `yaml:"model,omitempty"`
	BaseURL string `yaml:"base_url,omitempty"`
	APIKey  string `yaml:"api_key,omitempty"`
	// Script is the script file of the scripted provider.
	Script  string            `yaml:"script,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Price is nil when the model has no price; its cost is then unknown.
	Price *Price `yaml:"price,omitempty"`
	// Stream, when set to false, asks this model for whole replies rather
	// than streams.
	Stream *bool `yaml:"stream,omitempty"`
	// InlineToolCalls is auto, on or off: whether tool calls this model
	// writes as text are run ("" is auto).
	InlineToolCalls string `yaml:"inline_tool_calls,omitempty"`
	// Media are the media types the model takes in a user message
	// (image/*, application/pdf): images and files a person sent reach it
	// as themselves; others as a line of text describing them. Empty: none.
	Media []string `yaml:"media,omitempty"`
}

// Price is what a model costs, in USD per million tokens, written as
// price: {input: 0.15, output: 0.6, cached: 0.075}.
type Price struct {
	InputPerMTok  float64 `yaml:"input"`
	OutputPerMTok float64 `yaml:"output"`
	// CachedPerMTok is the price of cached input tokens.
	CachedPerMTok float64 `yaml:"cached,omitempty"`
}

// MCPServer is one entry of mcp_servers: either a command to start
// (stdio) or the URL of a running server, never both.
type MCPServer struct {
	Command string            `yaml:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty"`
	Dir     string            `yaml:"dir,omitempty"`
	URL     string            `yaml:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Timeout bounds connecting and each call (default 60s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// A2AAgent is one entry of a2a_agents: a remote agent speaking A2A,
// used as a tool of the agents that name it.
type A2AAgent struct {
	// URL is the agent's A2A base URL; its card is at
	// URL/.well-known/agent-card.json.
	URL string `yaml:"url"`
	// Description is what the calling agent's model sees of the tool; empty
	// means a generic one (the remote card is fetched only on the first call).
	Description string `yaml:"description,omitempty"`
	// Headers are sent with every request, e.g. the remote server's API key
	// as Authorization: Bearer ${REMOTE_KEY}.
	Headers map[string]string `yaml:"headers,omitempty"`
	// Timeout bounds each call, waiting for the remote task included
	// (default 10m).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// Agent is one entry of agents.
type Agent struct {
	// Model names an entry of Config.Models.
	Model string `yaml:"model"`
	// FallbackModels are tried in order when Model fails.
	FallbackModels []string `yaml:"fallback_models,omitempty"`
	Profile        Profile  `yaml:"profile,omitempty"`
	Instructions   string   `yaml:"instructions,omitempty"`
	// Description says what the agent is for: what a parent agent sees of
	// it as a tool, and what the protocol adapters show of it.
	Description string `yaml:"description,omitempty"`
	// Strategy is StrategyReact (also the empty string) or StrategyPlanExecute.
	Strategy string `yaml:"strategy,omitempty"`
	// Plan configures strategy plan_execute.
	Plan PlanConfig `yaml:"plan,omitempty"`
	// Stream, when set to false, asks the agent's models for whole
	// replies rather than streams.
	Stream *bool `yaml:"stream,omitempty"`
	// Tools are tool names or globs ("fs.*"); the name of another agent makes
	// that agent a tool.
	Tools         []string      `yaml:"tools,omitempty"`
	Approval      Approval      `yaml:"approval,omitempty"`
	Limits        Limits        `yaml:"limits,omitempty"`
	Timeouts      Timeouts      `yaml:"timeouts,omitempty"`
	Compaction    Compaction    `yaml:"compaction,omitempty"`
	LoopDetection LoopDetection `yaml:"loop_detection,omitempty"`
	Memory        AgentMemory   `yaml:"memory,omitempty"`
	// Gateway overrides the gateway's settings for the sources whose
	// sessions belong to the agent; a source's own settings win.
	Gateway GatewaySettings `yaml:"gateway,omitempty"`
}

// InputLimit is MaxInputBytes, or DefaultMaxInputBytes when it is zero.
func (c *Config) InputLimit() int64 {
	if c.MaxInputBytes > 0 {
		return c.MaxInputBytes
	}
	return DefaultMaxInputBytes
}

// Models returns the agent's model followed by its fallback models.
func (a Agent) Models() []string {
	return append([]string{a.Model}, a.FallbackModels...)
}

// Profile describes who the agent is; it is rendered into the system prompt.
type Profile struct {
	Name      string `yaml:"name,omitempty"`
	Role      string `yaml:"role,omitempty"`
	Goal      string `yaml:"goal,omitempty"`
	Backstory string `yaml:"backstory,omitempty"`
	Language  string `yaml:"language,omitempty"`
	Tone      string `yaml:"tone,omitempty"`
}

// Approval says which tool calls wait for a human. Ask and Deny are tool
// names or globs; deny wins over ask, ask over the tool's own policy, which
// wins over Default.
type Approval struct {
	// Default is "", ApprovalAuto, ApprovalAsk or ApprovalDeny.
	Default string   `yaml:"default,omitempty"`
	Ask     []string `yaml:"ask,omitempty"`
	Deny    []string `yaml:"deny,omitempty"`
	// Expires is how long a request for a person waits before it gets its
	// default decision (an approval: reject, reason expired); zero means
	// never. ExpiresFor sets it per tool (names or globs).
	Expires    Duration            `yaml:"expires,omitempty"`
	ExpiresFor map[string]Duration `yaml:"expires_for,omitempty"`
	// AutoWhenDelegated approves the agent's ask calls when it runs as
	// another agent's sub-agent.
	AutoWhenDelegated *bool `yaml:"auto_when_delegated,omitempty"`
}

// Limits bound a run. Zero means no limit, except MaxRounds, which Load and
// Parse set to DefaultMaxRounds when it is zero.
type Limits struct {
	MaxRounds         int      `yaml:"max_rounds,omitempty"`
	MaxSteps          int      `yaml:"max_steps,omitempty"`
	MaxTokens         int64    `yaml:"max_tokens,omitempty"`
	MaxCostUSD        float64  `yaml:"max_cost_usd,omitempty"`
	SessionMaxTokens  int64    `yaml:"session_max_tokens,omitempty"`
	SessionMaxCostUSD float64  `yaml:"session_max_cost_usd,omitempty"`
	MaxTurnDuration   Duration `yaml:"max_turn_duration,omitempty"`
}

// Timeouts bound the waits of a run. Zero means the runtime's default.
type Timeouts struct {
	// FirstFeedback is how long a model may stay silent before the user
	// sees a waiting pulse.
	FirstFeedback Duration `yaml:"first_feedback,omitempty"`
	FirstChunk    Duration `yaml:"first_chunk,omitempty"`
	Idle          Duration `yaml:"idle,omitempty"`
	Hard          Duration `yaml:"hard,omitempty"`
	// Tool bounds each tool call of the agent, unless the tool sets its
	// own timeout; Tools bound the named tools, over their own.
	Tool  Duration            `yaml:"tool,omitempty"`
	Tools map[string]Duration `yaml:"tools,omitempty"`
}

// Compaction bounds the history sent to the model. With none of
// MaxMessages, MaxChars and MaxTokens set, the runtime's defaults apply
// (more than 20 messages or 48,000 characters); Off (written compaction:
// off) turns compaction off.
type Compaction struct {
	Off         bool `yaml:"off,omitempty"`
	MaxMessages int  `yaml:"max_messages,omitempty"`
	MaxChars    int  `yaml:"max_chars,omitempty"`
	MaxTokens   int  `yaml:"max_tokens,omitempty"`
	KeepRecent  int  `yaml:"keep_recent,omitempty"`
	// Model names the model that writes summaries; "" means the agent's.
	Model string `yaml:"model,omitempty"`
}

// PlanConfig configures plan-and-execute: how many steps a plan may have
// (default 10), how the answer of a plan without a reply step is written
// (Summarizer), and whether a failed step makes the model plan again
// (replan: on_failure, at most twice a run).
type PlanConfig struct {
	MaxSteps int `yaml:"max_steps,omitempty"`
	// Summarizer is SummarizerModel (also the empty string: the agent's
	// model summarises the observations), SummarizerTemplate (the
	// observations listed, no model call) or the name of an entry of
	// models, which then summarises.
	Summarizer string `yaml:"summarizer,omitempty"`
	Replan     string `yaml:"replan,omitempty"`
	// StructuredOutput asks the planner for JSON following the plan's
	// schema (response_format), for providers that support it.
	StructuredOutput *bool `yaml:"structured_output,omitempty"`
}

// AgentMemory gives an agent a memory, in the store's database, and its
// retrieve tool; RememberTurns also writes each finished turn to it (and
// enables it).
type AgentMemory struct {
	Enabled       *bool `yaml:"enabled,omitempty"`
	RememberTurns *bool `yaml:"remember_turns,omitempty"`
}

// On reports whether the agent has a memory.
func (m AgentMemory) On() bool {
	return m.Enabled != nil && *m.Enabled || m.RememberTurns != nil && *m.RememberTurns
}

// LoopDetection sets how many repeats of the same action warn and end a
// run. Zero means the default (DefaultLoopWarning, DefaultLoopCritical);
// off: true switches the detectors off.
type LoopDetection struct {
	Warning  int   `yaml:"warning,omitempty"`
	Critical int   `yaml:"critical,omitempty"`
	Off      *bool `yaml:"off,omitempty"`
}

// The loop detectors' default thresholds (agentrt.DefaultLoopWarning and
// DefaultLoopCritical).
const (
	DefaultLoopWarning  = 4
	DefaultLoopCritical = 8
)

// Server configures agentrt serve.
type Server struct {
	Addr string `yaml:"addr,omitempty"`
	// APIKeys map bearer keys to tenants and principals. No keys (here or
	// in APIKeysFile) means the server answers only loopback clients.
	APIKeys []APIKey `yaml:"api_keys,omitempty"`
	// APIKeysFile names a YAML file of more keys, each given by its hash
	// only (agentrt keys new writes it): a list of {hash, tenant,
	// principal, rate, burst, max_streams}.
	APIKeysFile string `yaml:"api_keys_file,omitempty"`
	// MaxBodyBytes bounds a request's body (default 1 MiB); MaxJSONDepth
	// how deeply its JSON nests (default 32).
	MaxBodyBytes int64 `yaml:"max_body_bytes,omitempty"`
	MaxJSONDepth int   `yaml:"max_json_depth,omitempty"`
	// RequestTimeout bounds a request that does not stream, and the
	// reading of any request's body (default 60s).
	RequestTimeout Duration `yaml:"request_timeout,omitempty"`
	// ReadTimeout is how long the server waits for a client that sends
	// nothing: for a request's headers, and for each part of its body
	// (default 10s).
	ReadTimeout Duration `yaml:"read_timeout,omitempty"`
	// Heartbeat is how often an idle stream gets a comment (default 15s).
	Heartbeat Duration `yaml:"heartbeat,omitempty"`
	// ClientBuffer is how many events a stream holds for a slow client
	// before it tells the client to reconnect (default 1024).
	ClientBuffer int `yaml:"client_buffer,omitempty"`
	// WriteTimeout drops a streaming client that takes no bytes for that
	// long (default 30s).
	WriteTimeout Duration `yaml:"write_timeout,omitempty"`
	// MaxStreams is how many streams one API key may hold open at once
	// (a key's max_streams wins), and the clients on this machine
	// together when there are no keys (default 256).
	MaxStreams int `yaml:"max_streams,omitempty"`
	// MaxConnections is how many connections the server holds open at
	// once; more wait to be accepted (default: half the process's limit
	// on open files, which agentrt serve raises to its hard limit).
	MaxConnections int `yaml:"max_connections,omitempty"`
	// AllowedHosts are the Host names (or addresses, with or without a
	// port) the server answers to besides localhost, 127.0.0.1 and
	// [::1]; without API keys those are all it answers to, with keys and
	// none listed, any.
	AllowedHosts []string `yaml:"allowed_hosts,omitempty"`
	// TrustedProxy lets a server without API keys answer requests that
	// came through a proxy (Forwarded, X-Forwarded-For, …); off by
	// default.
	TrustedProxy *bool `yaml:"trusted_proxy,omitempty"`
	// CORS says which web pages may call the API.
	CORS ServerCORS `yaml:"cors,omitempty"`
	// ShutdownGrace is how long a stopping server lets runs finish before
	// it hands the rest over to other replicas (default 10s).
	ShutdownGrace Duration `yaml:"shutdown_grace,omitempty"`
	// SweepEvery is how often the server looks for runs whose process
	// died and requests that expired (default: the lease TTL), with
	// jitter.
	SweepEvery Duration `yaml:"sweep_every,omitempty"`
	// Fetch says which URLs of images and files a client names (an
	// OpenAI image_url or file_url, an AG-UI url source, an A2A part's
	// url) the server fetches; none by default.
	Fetch ServerFetch `yaml:"fetch,omitempty"`
	// A2A configures the A2A endpoints of the agents (/v1/a2a/NAME).
	A2A ServerA2A `yaml:"a2a,omitempty"`
	// UI configures the inspector, the pages at /ui/ (docs/inspector.md).
	UI ServerUI `yaml:"ui,omitempty"`
}

// ServerUI configures the inspector.
type ServerUI struct {
	// Disabled leaves the pages out; the API stays.
	Disabled bool `yaml:"disabled,omitempty"`
	// Secret signs the sign-in cookies and the forms' CSRF tokens: at
	// least 32 bytes, the same on every replica behind one address
	// (${AGENTRT_UI_SECRET}); empty: a random one each start, so that a
	// restart signs everybody out.
	Secret string `yaml:"secret,omitempty"`
}

// ServerCORS configures the web pages of other origins that may call the
// API.
type ServerCORS struct {
	// AllowedOrigins are their origins ("https://app.example.com"; "*":
	// any, only with API keys); none by default. server.cors_origins, its
	// old name, is read into it.
	AllowedOrigins []string `yaml:"allowed_origins,omitempty"`
}

// ServerFetch configures the fetching of the URLs clients name for their
// images and files (server.FetchConfig).
type ServerFetch struct {
	// AllowedHosts are the hosts fetched from: a name, *.example.com (the
	// names under it), an address, or "*" (any). None: no URL is fetched.
	AllowedHosts []string `yaml:"allowed_hosts,omitempty"`
	// AllowedNetworks are networks that are not public (10.1.2.0/24, or
	// an address) a fetch may reach anyway; none by default: only public
	// addresses, checked on the address dialed.
	AllowedNetworks []string `yaml:"allowed_networks,omitempty"`
	// Timeout bounds a fetch (default 10s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// ServerA2A configures the server's A2A endpoints.
type ServerA2A struct {
	// PublicURL is the server's URL as A2A clients reach it (behind a
	// proxy: "https://agents.example.com"), which the agents' cards give
	// as their endpoints; empty: the scheme and host of each card
	// request.
	PublicURL string `yaml:"public_url,omitempty"`
	// AllowPrivateWebhooks lets push notifications go to loopback and
	// private addresses; off by default (A2A's SSRF guidance): a client
	// could otherwise make the server post into its own network.
	AllowPrivateWebhooks *bool `yaml:"allow_private_webhooks,omitempty"`
}

// Gateway policies: what the gateway does with input for a source whose
// turn is running. The empty policy means GatewayInterrupt.
const (
	GatewayInterrupt = "interrupt" // the turn restarts with the new input merged
	GatewayQueue     = "queue"     // the next turn answers it
	GatewayReject    = "reject"    // it is refused (input_rejected)
	GatewaySteer     = "steer"     // the running turn's model gets it at its next call
)

// GatewaySettings are the settings of the gateway an agent or a source
// may override. Zero values keep what they override.
type GatewaySettings struct {
	// Debounce is how long a source must stay quiet before its turn
	// starts; zero starts it at once.
	Debounce Duration `yaml:"debounce,omitempty"`
	// MaxWait bounds the debounce from a source's first pending input;
	// zero means 10 × Debounce.
	MaxWait Duration `yaml:"max_wait,omitempty"`
	// Policy is GatewayInterrupt, GatewayQueue, GatewaySteer or GatewayReject.
	Policy string `yaml:"policy,omitempty"`
	// MaxPending and MaxPendingBytes bound what one source piles up: the
	// inputs waiting for its turn, and their bytes; past either an input
	// is refused (source_full). Zero: 32, and 8 × max_input_bytes.
	MaxPending      int   `yaml:"max_pending,omitempty"`
	MaxPendingBytes int64 `yaml:"max_pending_bytes,omitempty"`
	// MaxRestarts bounds how often newer input restarts one turn under
	// the interrupt policy; past it, newer input waits for the next
	// turn. Zero: 5.
	MaxRestarts int `yaml:"max_restarts,omitempty"`
	// Prompts is what input does to a session waiting on a prompt (a
	// question answered in words): GatewayPromptsAnswer answers it with
	// the input's text, GatewayPromptsPolicy leaves it to Policy. Empty:
	// answer on a channel's conversations, policy elsewhere.
	Prompts string `yaml:"prompts,omitempty"`
}

// What input does to a session that waits on a prompt (GatewaySettings.Prompts).
const (
	GatewayPromptsAnswer = "answer"
	GatewayPromptsPolicy = "policy"
)

// Gateway configures the gateway: its settings for every source, the
// bounds of its loop, and the sources' own settings.
type Gateway struct {
	GatewaySettings `yaml:",inline"`
	// Workers bounds the sources served at once; zero means 64.
	Workers int `yaml:"workers,omitempty"`
	// Poll is how often the gateway looks for input other processes
	// stored; zero means 200ms.
	Poll Duration `yaml:"poll,omitempty"`
	// Sources are the settings of named sources.
	Sources map[string]GatewaySource `yaml:"sources,omitempty"`
}

// GatewaySource is one entry of gateway.sources.
type GatewaySource struct {
	GatewaySettings `yaml:",inline"`
	// Session is the session the source's inputs go to when they name
	// none; empty means the session named after the source.
	Session string `yaml:"session,omitempty"`
}

// SessionFor returns the session source's inputs go to when they name
// none: its gateway.sources entry's session, else the source's name.
func (c *Config) SessionFor(source string) string {
	if s := c.Gateway.Sources[source].Session; s != "" {
		return s
	}
	return source
}

// APIKey is one accepted API key and the tenant its requests belong to.
type APIKey struct {
	Key string `yaml:"key,omitempty"`
	// Hash is the key's SHA-256, "sha256:" and 64 hex digits, for a key
	// kept out of the config (one of Key and Hash).
	Hash   string `yaml:"hash,omitempty"`
	Tenant string `yaml:"tenant"`
	// Principal names who holds the key: it is recorded as who decided
	// what the key's requests decide. Empty: derived from the key's hash.
	Principal string `yaml:"principal,omitempty"`
	// Rate is the requests per second the key may make (zero: no limit),
	// Burst how many at once.
	Rate  float64 `yaml:"rate,omitempty"`
	Burst int     `yaml:"burst,omitempty"`
	// MaxStreams is how many streams the key may hold open at once
	// (zero: server.max_streams).
	MaxStreams int `yaml:"max_streams,omitempty"`
}

// Position is where something is written in a config file. Lines and
// columns count from 1; zero means unknown.
type Position struct {
	File   string
	Line   int
	Column int
}

func (p Position) String() string {
	s := p.File
	if p.Line > 0 {
		s += fmt.Sprintf(":%d", p.Line)
		if p.Column > 0 {
			s += fmt.Sprintf(":%d", p.Column)
		}
	}
	return s
}

// Default returns the built-in config used when no file exists: a SQLite
// store under .agentrt/, the offline demo model and an assistant with the
// calculator and clock tools.
func Default() *Config {
	c := &Config{Store: DefaultStore}
	c.applyDefaults()
	return c
}

// applyDefaults fills what a file may leave out. It runs after validation,
// so the defaults themselves are never reported as problems.
func (c *Config) applyDefaults() {
	if c.Store == "" {
		c.Store = DefaultStore
	}
	if c.Models == nil {
		c.Models = map[string]Model{}
	}
	if c.MCPServers == nil {
		c.MCPServers = map[string]MCPServer{}
	}
	if len(c.Agents) == 0 {
		// With exactly one model the user's intent is plain; otherwise the
		// first model agentrt can find (provider auto), which is the offline
		// demo model when there is none.
		model := "auto"
		if len(c.Models) == 1 {
			for name := range c.Models {
				model = name
			}
		}
		if _, ok := c.Models[model]; !ok {
			c.Models[model] = Model{Provider: "auto"}
		}
		c.Agents = map[string]Agent{DefaultAgent: {
			Model: model,
			Tools: []string{"calculator", "clock"},
		}}
	}
	for name, a := range c.Agents {
		if a.Limits.MaxRounds == 0 {
			a.Limits.MaxRounds = DefaultMaxRounds
			c.Agents[name] = a
		}
	}
}

// Load reads and parses the file at path, expanding ${VAR} from the
// process environment. A missing file is an error that wraps
// fs.ErrNotExist; callers wanting the built-in config then use Default.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// File returns the name the config was parsed under, or "" for Default.
func (c *Config) File() string { return c.file }

// AgentNames returns the names of the agents, sorted.
func (c *Config) AgentNames() []string { return sortedKeys(c.Agents) }

// ModelNames returns the names of the models, sorted.
func (c *Config) ModelNames() []string { return sortedKeys(c.Models) }

// A2AAgentNames returns the names of the remote A2A agents, sorted.
func (c *Config) A2AAgentNames() []string { return sortedKeys(c.A2AAgents) }

// MCPServerNames returns the names of the MCP servers, sorted.
func (c *Config) MCPServerNames() []string { return sortedKeys(c.MCPServers) }

// Pos returns where the key at path is written. A path joins keys with dots
// and indexes sequences with [i]: "agents.assistant.limits.max_rounds",
// "agents.assistant.tools[2]". Map entries are found at their key, sequence
// items at the item. Pos reports false for anything not written in the file,
// such as defaults.
func (c *Config) Pos(path string) (Position, bool) {
	p, ok := c.pos[path]
	return p, ok
}

// Problemf returns a Problem at path, positioned at path or, when path is
// not written in the file, at its closest written parent. Callers use it to
// report problems found later, e.g. an MCP server that fails to start.
func (c *Config) Problemf(path, format string, args ...any) Problem {
	p := c.nearest(path)
	return Problem{File: c.file, Line: p.Line, Column: p.Column, Path: path, Message: fmt.Sprintf(format, args...)}
}

// Unset returns the variables in the value at path that expanded to ""
// because they were not set and had no default.
func (c *Config) Unset(path string) []string {
	return slices.Clone(c.unset[path])
}

func (c *Config) nearest(path string) Position {
	for {
		if p, ok := c.pos[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return Position{File: c.file}
		}
		path = path[:i]
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Channel kinds.
const (
	ChannelTelegram = "telegram"
	ChannelSlack    = "slack"
	ChannelWebhook  = "webhook"
	ChannelWhatsApp = "whatsapp"
	ChannelDiscord  = "discord"
)

// ChannelKinds are the kinds of channel this build serves.
var ChannelKinds = []string{ChannelDiscord, ChannelSlack, ChannelTelegram, ChannelWebhook, ChannelWhatsApp}

// Channel is one entry of channels: a platform connection of an agent.
type Channel struct {
	// Kind is discord, slack, telegram, webhook or whatsapp.
	Kind string `yaml:"kind"`
	// Agent talks in the channel's conversations; empty: the default
	// agent.
	Agent string `yaml:"agent,omitempty"`
	// Allow, when set, are the senders (or conversations) that may talk to
	// the agent; the others get Refusal (empty: nothing) and never reach
	// it.
	Allow   []string `yaml:"allow,omitempty"`
	Refusal string   `yaml:"refusal,omitempty"`
	// Approvers, when set, are the senders who may answer the agent's
	// questions (approve a call); empty: whoever may talk to it.
	Approvers []string `yaml:"approvers,omitempty"`
	// AckWithin is how long the platform waits for an answer to its
	// requests; zero: the platform's (Slack and Discord 3s, else 10s).
	// Attachments taking longer to download follow the answer.
	AckWithin Duration `yaml:"ack_within,omitempty"`
	// Stream shows an answer as it is written (a message posted, then
	// edited at most every StreamEvery, default 1s): Telegram, Slack,
	// Discord and the webhook; WhatsApp cannot edit a message.
	Stream      *bool    `yaml:"stream,omitempty"`
	StreamEvery Duration `yaml:"stream_every,omitempty"`
	// The gateway's settings for the channel's conversations (each its
	// own source): a chat's default debounce is 1.5s.
	GatewaySettings `yaml:",inline"`
	// APIURL is the platform's base URL, for another server (a test's).
	APIURL string `yaml:"api_url,omitempty"`
	// Telegram: the bot's token, and the webhook's secret token
	// (X-Telegram-Bot-Api-Secret-Token). Slack: the bot's token
	// (xoxb-…) and the app's signing secret.
	BotToken      string `yaml:"bot_token,omitempty"`
	SecretToken   string `yaml:"secret_token,omitempty"`
	SigningSecret string `yaml:"signing_secret,omitempty"`
	// Discord: the application's public key (hex), which signs the
	// interactions (and BotToken, which posts).
	PublicKey string `yaml:"public_key,omitempty"`
	// Webhook: the secret that signs both ways, and where the agent's
	// messages are posted.
	Secret   string `yaml:"secret,omitempty"`
	ReplyURL string `yaml:"reply_url,omitempty"`
	// WhatsApp: the access token, the app's secret (which signs the
	// notifications), the webhook's verify token, the business number's
	// id.
	AccessToken   string `yaml:"access_token,omitempty"`
	AppSecret     string `yaml:"app_secret,omitempty"`
	VerifyToken   string `yaml:"verify_token,omitempty"`
	PhoneNumberID string `yaml:"phone_number_id,omitempty"`
}

// ChannelNames returns the names of the configured channels, sorted.
func (c *Config) ChannelNames() []string { return sortedKeys(c.Channels) }

// Engines.
const (
	EngineLocal    = "local"
	EngineTemporal = "temporal"
)

// Temporal is how agentrt reaches a Temporal cluster (engine: temporal).
type Temporal struct {
	// Address is the frontend's host:port; empty: 127.0.0.1:7233.
	Address string `yaml:"address,omitempty"`
	// Namespace is the Temporal namespace; empty: default.
	Namespace string `yaml:"namespace,omitempty"`
	// TaskQueue is the queue of the sessions' workflows and their
	// activities; empty: agentrt.
	TaskQueue string `yaml:"task_queue,omitempty"`
	// TLS, when set, connects with TLS (mutual, with a client certificate
	// and key; CA, when set, is the server's authority).
	TLS *TemporalTLS `yaml:"tls,omitempty"`
	// StepTimeout bounds one step or one tool call (a model call, a
	// tool's run, a batch run whole): zero, an hour. HeartbeatTimeout is
	// how long a step's or a tool call's worker may go unheard before the
	// step is tried elsewhere (the call left to the next step): zero, 10s.
	StepTimeout      Duration `yaml:"step_timeout,omitempty"`
	HeartbeatTimeout Duration `yaml:"heartbeat_timeout,omitempty"`
}

// TemporalTLS are the files of a TLS connection to Temporal.
type TemporalTLS struct {
	Cert       string `yaml:"cert,omitempty"`
	Key        string `yaml:"key,omitempty"`
	CA         string `yaml:"ca,omitempty"`
	ServerName string `yaml:"server_name,omitempty"`
}
