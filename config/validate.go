package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/fetch"
	"github.com/agentrt/agentrt/internal/weborigin"
	"github.com/agentrt/agentrt/session"
)

// provider is what a provider needs from its model entry. New providers
// join the list in providers.
type provider struct {
	name        string
	needsModel  bool
	needsScript bool
	// needsKey: api_key is required unless base_url points elsewhere
	// (e.g. a local server that takes no key).
	needsKey bool
}

var providers = []provider{
	{name: "openai", needsModel: true, needsKey: true},
	{name: "anthropic", needsModel: true, needsKey: true},
	{name: "scripted", needsScript: true},
	{name: "demo"},
	// auto: the first model agentrt finds (OPENAI_API_KEY, ANTHROPIC_API_KEY,
	// a local Ollama), else demo.
	{name: "auto"},
}

// Providers returns the names of the providers a model may use.
func Providers() []string {
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.name
	}
	return names
}

func lookupProvider(name string) (provider, bool) {
	i := slices.IndexFunc(providers, func(p provider) bool { return p.name == name })
	if i < 0 {
		return provider{}, false
	}
	return providers[i], true
}

// toolName is what a model accepts as a function name; agents used as
// tools and MCP servers (whose name prefixes their tools) must fit it.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckStore reports whether dsn names a store agentrt knows: sqlite:PATH,
// postgres://…, postgresql://… or memory:. The error never repeats the DSN,
// which may hold a password.
func CheckStore(dsn string) error {
	scheme, rest, found := strings.Cut(dsn, ":")
	const want = "want sqlite:PATH, postgres://…, postgresql://… or memory:"
	if !found {
		// Without a colon there is no password to hide.
		return fmt.Errorf("bad store %q: %s", dsn, want)
	}
	switch scheme {
	case "sqlite":
		if rest == "" {
			return fmt.Errorf("sqlite: needs a file path, e.g. sqlite:.agentrt/agentrt.db")
		}
	case "memory":
	case "postgres", "postgresql":
		if _, err := url.Parse(dsn); err != nil {
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf("bad %s URL: %v", scheme, err)
		}
		if !strings.HasPrefix(rest, "//") {
			return fmt.Errorf("bad %s URL: want %s://user:pass@host/db", scheme, scheme)
		}
	default:
		return fmt.Errorf("unknown store %q: %s", scheme+":", want)
	}
	return nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("bad URL %q: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad URL %q: want an absolute http:// or https:// URL", s)
	}
	return nil
}

func (d *decoder) at(c *Config, path, format string, args ...any) {
	d.problems = append(d.problems, c.Problemf(path, format, args...))
}

// atValue reports a problem with the value at path, positioned at the
// value rather than its key.
func (d *decoder) atValue(c *Config, path, format string, args ...any) {
	p := c.Problemf(path, format, args...)
	if v, ok := d.vpos[path]; ok {
		p.Line, p.Column = v.Line, v.Column
	}
	d.problems = append(d.problems, p)
}

// empty says why the value at path is empty: an unset variable, or nothing
// written.
func (c *Config) empty(path, key string) string {
	if vars := c.unset[path]; len(vars) > 0 {
		refs := make([]string, len(vars))
		for i, v := range vars {
			refs[i] = "${" + v + "}"
		}
		verb := "is"
		if len(vars) > 1 {
			verb = "are"
		}
		return fmt.Sprintf("%s is empty because %s %s not set", key, strings.Join(refs, ", "), verb)
	}
	return key + " is required"
}

// validate checks what the decoder cannot see field by field: required
// keys, allowed values and references between entries.
func (d *decoder) validate(c *Config) {
	if c.Store == "memory" {
		c.Store = "memory:" // YAML needs quotes around memory:, so accept it bare
	}
	if c.Store == "" {
		if len(c.unset["store"]) > 0 && !d.failed["store"] {
			d.at(c, "store", "%s", c.empty("store", "store"))
		}
	} else if err := CheckStore(c.Store); err != nil {
		d.atValue(c, "store", "%v", err)
	}
	if c.Tenant != "" {
		if err := session.CheckTenant(c.Tenant); err != nil {
			d.atValue(c, "tenant", "%v", err)
		}
	}
	for _, name := range sortedKeys(c.Models) {
		d.validateModel(c, name, c.Models[name])
	}
	for _, name := range sortedKeys(c.MCPServers) {
		d.validateMCPServer(c, name, c.MCPServers[name])
	}
	for _, name := range sortedKeys(c.A2AAgents) {
		d.validateA2AAgent(c, name, c.A2AAgents[name])
	}
	for _, name := range sortedKeys(c.Agents) {
		d.validateAgent(c, name, c.Agents[name])
	}
	if a := c.DefaultAgentName; a != "" && len(c.Agents) > 0 {
		if _, ok := c.Agents[a]; !ok {
			names := sortedKeys(c.Agents)
			d.atValue(c, "default_agent", "unknown agent %q%s (agents: %s)", a, suggest(a, names), strings.Join(names, ", "))
		}
	}
	d.validateServer(c)
	d.validateGateway(c)
	for _, name := range sortedKeys(c.Channels) {
		d.validateChannel(c, name, c.Channels[name])
	}
}

// channelNeeds are the credentials each kind of channel needs.
var channelNeeds = map[string][]string{
	ChannelTelegram: {"bot_token", "secret_token"},
	ChannelSlack:    {"bot_token", "signing_secret"},
	ChannelDiscord:  {"public_key", "bot_token"},
	ChannelWhatsApp: {"access_token", "app_secret", "verify_token", "phone_number_id"},
	ChannelWebhook:  {"secret", "reply_url"},
}

// value is a channel's credential of key.
func (ch Channel) value(key string) string {
	return map[string]string{"bot_token": ch.BotToken, "secret_token": ch.SecretToken, "signing_secret": ch.SigningSecret,
		"public_key": ch.PublicKey, "access_token": ch.AccessToken, "app_secret": ch.AppSecret, "verify_token": ch.VerifyToken,
		"phone_number_id": ch.PhoneNumberID, "secret": ch.Secret, "reply_url": ch.ReplyURL}[key]
}

// CheckChannels reports the channels' missing credentials, with their
// lines: what agentrt serve and agentrt channels check need, and the
// commands that do not serve the platforms do not (a secret from an
// unset variable does not stop agentrt sessions list).
func (c *Config) CheckChannels() error {
	var problems []Problem
	for _, name := range c.ChannelNames() {
		ch := c.Channels[name]
		p := join("channels", name)
		for _, key := range channelNeeds[ch.Kind] {
			if ch.value(key) == "" {
				problems = append(problems, c.Problemf(p, "%s (a %s channel needs it)", c.empty(p+"."+key, key), ch.Kind))
			}
		}
	}
	return errorOf(problems)
}

// channelName is what names a channel: the first part of its
// conversations' sources and of its URL.
var channelName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func (d *decoder) validateChannel(c *Config, name string, ch Channel) {
	p := join("channels", name)
	if !channelName.MatchString(name) {
		d.at(c, p, "bad channel name %q: it names the channel's URL and sources, so use letters, digits, _ and - (at most 32)", name)
	}
	if ch.Kind == "" && !d.failed[p+".kind"] {
		d.at(c, p, "kind is required (%s)", strings.Join(ChannelKinds, ", "))
	}
	if ch.Agent != "" && len(c.Agents) > 0 {
		if _, ok := c.Agents[ch.Agent]; !ok {
			names := sortedKeys(c.Agents)
			d.atValue(c, p+".agent", "unknown agent %q%s (agents: %s)", ch.Agent, suggest(ch.Agent, names), strings.Join(names, ", "))
		}
	}
	d.checkGatewaySettings(c, p, ch.GatewaySettings)
	if ch.Stream != nil && *ch.Stream && ch.Kind == ChannelWhatsApp {
		d.at(c, p+".stream", "a WhatsApp message cannot be edited: an answer cannot be streamed into one")
	}
	switch ch.Kind {
	case ChannelWebhook:
		if ch.ReplyURL != "" {
			if err := checkHTTPURL(ch.ReplyURL); err != nil {
				d.atValue(c, p+".reply_url", "%v", err)
			}
		}
	}
	if ch.APIURL != "" {
		if err := checkHTTPURL(ch.APIURL); err != nil {
			d.atValue(c, p+".api_url", "%v", err)
		}
	}
}

// CheckSessionID reports whether id is usable as a session id written in
// the config (see session.CheckID).
func CheckSessionID(id string) error { return session.CheckID(id) }

func (d *decoder) validateGateway(c *Config) {
	d.checkGatewaySettings(c, "gateway", c.Gateway.GatewaySettings)
	for _, name := range sortedKeys(c.Gateway.Sources) {
		p := join("gateway.sources", name)
		src := c.Gateway.Sources[name]
		if strings.TrimSpace(name) == "" {
			d.at(c, p, "a source needs a name")
		}
		d.checkGatewaySettings(c, p, src.GatewaySettings)
		if src.Session == "" {
			if len(c.unset[p+".session"]) > 0 && !d.failed[p+".session"] {
				d.at(c, p+".session", "%s", c.empty(p+".session", "session"))
			}
			continue
		}
		if err := CheckSessionID(src.Session); err != nil {
			d.atValue(c, p+".session", "%v", err)
		}
	}
	for _, name := range sortedKeys(c.Agents) {
		d.checkGatewaySettings(c, "agents."+name+".gateway", c.Agents[name].Gateway)
	}
}

// checkGatewaySettings reports a max_wait below the debounce written
// beside it: the turn would always start at max_wait; and a
// max_pending_bytes below max_input_bytes: an input the gateway takes
// would be refused however little waits.
func (d *decoder) checkGatewaySettings(c *Config, p string, s GatewaySettings) {
	if s.MaxWait > 0 && s.Debounce > 0 && s.MaxWait < s.Debounce {
		d.atValue(c, p+".max_wait", "max_wait (%s) is below debounce (%s), so every turn would wait max_wait; raise max_wait or lower debounce",
			s.MaxWait, s.Debounce)
	}
	if s.MaxPendingBytes > 0 && s.MaxPendingBytes < c.InputLimit() {
		d.atValue(c, p+".max_pending_bytes", "max_pending_bytes (%d) is below max_input_bytes (%d), so the largest input taken would be refused however little waits; raise max_pending_bytes or lower max_input_bytes",
			s.MaxPendingBytes, c.InputLimit())
	}
}

func (d *decoder) validateModel(c *Config, name string, m Model) {
	p := join("models", name)
	if name == "" {
		d.at(c, p, "a model needs a name")
	}
	spec, ok := lookupProvider(m.Provider)
	switch {
	case m.Provider == "" && name == "price":
		d.at(c, p, "provider is required; if this was meant as prices, price goes inside a model entry: "+
			"models.NAME.price: {input: 0.15, output: 0.6}")
		return
	case m.Provider == "" && d.failed[p+".provider"]:
		return
	case m.Provider == "":
		d.at(c, p, "%s (one of %s)", c.empty(p+".provider", "provider"), strings.Join(Providers(), ", "))
		return
	case !ok:
		d.atValue(c, p+".provider", "unknown provider %q%s (known: %s)", m.Provider,
			suggest(m.Provider, Providers()), strings.Join(Providers(), ", "))
		return
	}
	if spec.needsModel && m.Model == "" && !d.failed[p+".model"] {
		d.at(c, p, "%s for provider %s", c.empty(p+".model", "model"), spec.name)
	}
	if spec.needsScript && m.Script == "" && !d.failed[p+".script"] {
		d.at(c, p, "%s for provider %s: the file of scripted replies", c.empty(p+".script", "script"), spec.name)
	}
	if m.BaseURL != "" {
		if err := checkHTTPURL(m.BaseURL); err != nil {
			d.atValue(c, p+".base_url", "%v", err)
		}
	}
}

func (d *decoder) validateMCPServer(c *Config, name string, s MCPServer) {
	p := join("mcp_servers", name)
	if !toolName.MatchString(name) {
		d.at(c, p, "bad server name %q: its tools are named %s.TOOL, so use letters, digits, _ and - (at most 64)", name, name)
	}
	switch {
	case s.Command == "" && s.URL == "" && (d.failed[p+".command"] || d.failed[p+".url"]):
	case s.Command == "" && s.URL == "":
		if len(c.unset[p+".url"]) > 0 {
			d.at(c, p, "%s", c.empty(p+".url", "url"))
		} else {
			d.at(c, p, "needs command (a program to start) or url (a running server)")
		}
	case s.Command != "" && s.URL != "":
		d.at(c, p, "has both command and url; keep one")
	}
	if s.URL != "" {
		if err := checkHTTPURL(s.URL); err != nil {
			d.atValue(c, p+".url", "%v", err)
		}
	}
}

func (d *decoder) validateA2AAgent(c *Config, name string, a A2AAgent) {
	p := join("a2a_agents", name)
	if !toolName.MatchString(name) {
		d.at(c, p, "bad name %q: a remote agent is a tool of the agents that list it, so use letters, digits, _ and - (at most 64)", name)
	}
	// The name is a tool name: two things under one name would make an
	// agent's tools ambiguous.
	if _, ok := c.Agents[name]; ok {
		d.at(c, p, "%q is also the name of an agent; rename one (both would be the tool %s)", name, name)
	}
	if _, ok := c.MCPServers[name]; ok {
		d.at(c, p, "%q is also the name of an MCP server; rename one", name)
	}
	switch {
	case a.URL == "" && d.failed[p+".url"]:
	case a.URL == "":
		d.at(c, p, "%s: the remote agent's A2A base URL", c.empty(p+".url", "url"))
	default:
		if err := checkHTTPURL(a.URL); err != nil {
			d.atValue(c, p+".url", "%v", err)
		}
	}
}

func (d *decoder) validateAgent(c *Config, name string, a Agent) {
	p := join("agents", name)
	if !toolName.MatchString(name) {
		d.at(c, p, "bad agent name %q: agents can be tools of other agents, so use letters, digits, _ and - (at most 64)", name)
	}
	switch {
	case a.Model == "" && d.failed[p+".model"]:
	case a.Model == "":
		d.at(c, p, "%s: name an entry of models", c.empty(p+".model", "model"))
	default:
		d.checkModelRef(c, p+".model", a.Model)
	}
	for i, m := range a.FallbackModels {
		ip := fmt.Sprintf("%s.fallback_models[%d]", p, i)
		switch {
		case m == "" && d.failed[ip]:
		case m == "":
			d.at(c, ip, "%s", c.empty(ip, "model name"))
		default:
			d.checkModelRef(c, ip, m)
		}
	}
	_, isModel := c.Models[a.Plan.Summarizer]
	switch s := a.Plan.Summarizer; {
	case s == "" || s == SummarizerModel || s == SummarizerTemplate:
	case isModel || s == "auto" || s == "demo":
		d.checkModelRef(c, p+".plan.summarizer", s)
	default:
		names := c.ModelNames()
		d.atValue(c, p+".plan.summarizer", "unknown summarizer %q%s (want %s: the agent's model, %s: the steps' observations listed with no model call, or a name from models: %s)",
			s, suggest(s, append([]string{SummarizerModel, SummarizerTemplate}, names...)), SummarizerModel, SummarizerTemplate, orNone(names))
	}
	if a.Compaction.Model != "" {
		d.checkModelRef(c, p+".compaction.model", a.Compaction.Model)
	}
	switch a.Strategy {
	case "", StrategyReact, StrategyPlanExecute:
	default:
		strategies := []string{StrategyReact, StrategyPlanExecute}
		d.atValue(c, p+".strategy", "unknown strategy %q%s (known: %s)", a.Strategy,
			suggest(a.Strategy, strategies), strings.Join(strategies, ", "))
	}
	switch a.Approval.Default {
	case "", ApprovalAuto, ApprovalAsk, ApprovalDeny:
	default:
		d.atValue(c, p+".approval.default", "unknown approval %q: want auto, ask or deny", a.Approval.Default)
	}
	d.checkPatterns(c, p+".tools", a.Tools)
	d.checkPatterns(c, p+".approval.ask", a.Approval.Ask)
	d.checkPatterns(c, p+".approval.deny", a.Approval.Deny)
}

func (d *decoder) checkModelRef(c *Config, p, ref string) {
	if _, ok := c.Models[ref]; ok {
		return
	}
	if ref == "auto" || ref == "demo" {
		// The auto model and the demo model need no entry: they are what
		// their names say.
		if c.Models == nil {
			c.Models = map[string]Model{}
		}
		c.Models[ref] = Model{Provider: ref}
		return
	}
	names := c.ModelNames()
	if len(names) == 0 {
		d.atValue(c, p, "unknown model %q: the file has no models; use auto (the first model agentrt finds), demo, or add models.%s with a provider", ref, ref)
		return
	}
	d.atValue(c, p, "unknown model %q%s (models: %s)", ref, suggest(ref, names), strings.Join(names, ", "))
}

// orNone joins names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "there are none"
	}
	return strings.Join(names, ", ")
}

func (d *decoder) checkPatterns(c *Config, p string, patterns []string) {
	for i, pat := range patterns {
		ip := fmt.Sprintf("%s[%d]", p, i)
		if pat == "" {
			if !d.failed[ip] {
				d.at(c, ip, "%s", c.empty(ip, "tool name"))
			}
			continue
		}
		if _, err := path.Match(pat, ""); err != nil {
			d.at(c, ip, "bad pattern %q: %v", pat, err)
		}
	}
}

func (d *decoder) validateServer(c *Config) {
	if addr := c.Server.Addr; addr != "" {
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			d.atValue(c, "server.addr", "bad address %q: want host:port, e.g. 127.0.0.1:8080", addr)
		}
	}
	if u := c.Server.A2A.PublicURL; u != "" && !strings.Contains(u, "$") {
		if err := checkHTTPURL(u); err != nil {
			d.atValue(c, "server.a2a.public_url", "%v (the server's URL as A2A clients reach it, e.g. https://agents.example.com)", err)
		}
	}
	for i, h := range c.Server.AllowedHosts {
		if _, err := weborigin.NormalizeHost(h); err != nil && !strings.Contains(h, "$") {
			d.at(c, fmt.Sprintf("server.allowed_hosts[%d]", i), "bad host %q: %v", h, err)
		}
	}
	for i, h := range c.Server.Fetch.AllowedHosts {
		if _, err := fetch.CheckHost(h); err != nil && !strings.Contains(h, "$") {
			d.at(c, fmt.Sprintf("server.fetch.allowed_hosts[%d]", i), "%v", err)
		}
	}
	for i, n := range c.Server.Fetch.AllowedNetworks {
		if _, err := FetchNetwork(n); err != nil && !strings.Contains(n, "$") {
			d.at(c, fmt.Sprintf("server.fetch.allowed_networks[%d]", i), "%v", err)
		}
	}
	if sec := c.Server.UI.Secret; sec != "" && len(sec) < 32 && !strings.Contains(sec, "$") {
		d.atValue(c, "server.ui.secret", "the secret is %d bytes: give at least 32 (e.g. openssl rand -hex 32), or none for a random one each start", len(sec))
	}
	origins := "server.cors.allowed_origins"
	if _, old := d.pos["server.cors_origins"]; old {
		origins = "server.cors_origins"
	}
	for i, o := range c.Server.CORS.AllowedOrigins {
		p := fmt.Sprintf("%s[%d]", origins, i)
		switch _, err := weborigin.Normalize(o); {
		case o == "*" && len(c.Server.APIKeys) == 0 && c.Server.APIKeysFile == "":
			d.at(c, p, "\"*\" without API keys would let every web page the user opens drive this server; list the origins, or configure server.api_keys")
		case err != nil && o != "*" && !strings.Contains(o, "$"):
			d.at(c, p, "bad origin %q: %v (or \"*\" for any, with API keys)", o, err)
		}
	}
	for i, k := range c.Server.APIKeys {
		p := fmt.Sprintf("server.api_keys[%d]", i)
		if k.Tenant == "" && !d.failed[p+".tenant"] {
			d.at(c, p, "%s", c.empty(p+".tenant", "tenant"))
		} else if err := session.CheckTenant(k.Tenant); err != nil && k.Tenant != "" && !strings.Contains(k.Tenant, "$") {
			d.atValue(c, p+".tenant", "%v", err)
		}
		if k.Key != "" && k.Hash != "" {
			d.at(c, p, "give the key or its hash, not both")
		}
		if h := k.Hash; h != "" && !validKeyHash(h) {
			d.atValue(c, p+".hash", "bad hash %q: want \"sha256:\" and 64 hex digits (agentrt keys hash KEY prints it)", h)
		}
	}
}

// FetchNetwork reads an entry of server.fetch.allowed_networks: a
// network (10.1.2.0/24, fd00::/8) or one address.
func FetchNetwork(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("bad network %q: want an address or one in CIDR form, e.g. 10.1.2.0/24", s)
	}
	return p.Masked(), nil
}

// CheckTools reports each tool name or pattern of an agent's tools,
// approval.ask and approval.deny that matches no tool, at the place it is
// written. known reports whether a pattern matches at least one tool the
// runtime has (built-in and MCP tools); the name of another agent always
// counts as a tool. A pattern in approval that matches nothing is most
// likely a typo that leaves a tool unguarded, hence reported too.
//
// names, when given, are the tools there are: a pattern that matches none
// gets a "did you mean" among them.
func (c *Config) CheckTools(known func(pattern string) bool, names ...string) error {
	var problems []Problem
	for _, name := range c.AgentNames() {
		a := c.Agents[name]
		for _, list := range []struct {
			key      string
			patterns []string
		}{{"tools", a.Tools}, {"approval.ask", a.Approval.Ask}, {"approval.deny", a.Approval.Deny}} {
			for i, pat := range list.patterns {
				if _, ok := c.Agents[pat]; ok || known(pat) {
					continue
				}
				if _, ok := c.A2AAgents[pat]; ok {
					continue
				}
				p := fmt.Sprintf("agents.%s.%s[%d]", name, list.key, i)
				problems = append(problems, c.Problemf(p, "%q matches no tool%s", pat, suggest(pat, names)))
			}
		}
	}
	return errorOf(problems)
}

// CheckA2AAgents reports, at its entry, each remote A2A agent whose name
// is already a tool's (isTool reports that for the runtime's tools): an
// agent listing the name could not tell which one it means.
func (c *Config) CheckA2AAgents(isTool func(name string) bool) error {
	var problems []Problem
	for _, name := range c.A2AAgentNames() {
		if isTool(name) {
			problems = append(problems, c.Problemf(join("a2a_agents", name), "%q is also the name of a tool; rename the remote agent", name))
		}
	}
	return errorOf(problems)
}

// CheckStrategies reports, with its position, each agent whose strategy
// is not one of available (what this build can run).
func (c *Config) CheckStrategies(available ...string) error {
	var problems []Problem
	for _, name := range c.AgentNames() {
		s := c.Agents[name].Strategy
		if s == "" || slices.Contains(available, s) {
			continue
		}
		p := "agents." + name + ".strategy"
		problems = append(problems, c.Problemf(p, "strategy %q is not available in this build yet (use %s)", s, strings.Join(available, " or ")))
	}
	return errorOf(problems)
}

// CheckModels reports what the named models (all models when none are
// named) lack in this environment, such as "api_key is empty because
// ${OPENAI_API_KEY} is not set". Parse does not report these: a model no
// run uses need not work. Call it for the models of the agent about to run
// (Agent.Models) and, in agentrt config check, for all.
func (c *Config) CheckModels(names ...string) error {
	if len(names) == 0 {
		names = c.ModelNames()
	}
	var problems []Problem
	for _, name := range names {
		p := join("models", name)
		m, ok := c.Models[name]
		if !ok {
			problems = append(problems, Problem{File: c.file, Path: p, Message: fmt.Sprintf("no model named %q", name)})
			continue
		}
		spec, _ := lookupProvider(m.Provider)
		if spec.needsKey && m.APIKey == "" && m.BaseURL == "" {
			msg := c.empty(p+".api_key", "api_key")
			if msg == "api_key is required" {
				msg += " for provider " + spec.name
			}
			problems = append(problems, c.Problemf(p+".api_key", "%s", msg))
		}
	}
	return errorOf(problems)
}

// CheckServer reports what agentrt serve needs and the environment lacks:
// every API key must be non-empty ("key is empty because ${AGENTRT_KEY} is
// not set") and different from the others. No keys at all is valid and
// means no authentication. Messages never repeat a key.
func (c *Config) CheckServer() error {
	var problems []Problem
	first := map[string]int{}
	for i, k := range c.Server.APIKeys {
		p := fmt.Sprintf("server.api_keys[%d]", i)
		if k.Key == "" && k.Hash != "" {
			continue
		}
		if k.Key == "" {
			problems = append(problems, c.Problemf(p+".key", "%s", c.empty(p+".key", "key")))
			continue
		}
		if j, dup := first[k.Key]; dup {
			problems = append(problems, c.Problemf(p+".key", "same key as server.api_keys[%d]", j))
			continue
		}
		first[k.Key] = i
	}
	return errorOf(problems)
}

// validKeyHash reports whether h is "sha256:" and 64 hex digits.
func validKeyHash(h string) bool {
	hex, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
