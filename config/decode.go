package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse parses and validates a config. name is the file name used in
// problems; env looks up ${VAR} references, and nil means os.LookupEnv.
//
// Every problem is reported, not just the first, as an *Error. Expansion
// applies to scalar values after YAML parsing, so a variable's value can
// never add keys or structure. An empty document is valid and gives the
// defaults; see Default and the package documentation for what a file may
// leave out.
func Parse(name string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	d := &decoder{
		file:   name,
		env:    env,
		pos:    map[string]Position{},
		vpos:   map[string]Position{},
		unset:  map[string][]string{},
		merged: map[*yaml.Node][]entry{},
		failed: map[string]bool{},
	}
	c := &Config{file: name, pos: d.pos, unset: d.unset}
	if root := d.parse(data); root != nil {
		d.config(root, c)
	}
	d.validate(c)
	if err := errorOf(d.problems); err != nil {
		return nil, err
	}
	c.applyDefaults()
	return c, nil
}

// decoder walks the yaml.Node tree by hand rather than through
// yaml.Unmarshal so that every problem carries a key path and position, and
// so that all problems are collected instead of the first.
type decoder struct {
	file     string
	env      func(string) (string, bool)
	problems []Problem
	pos      map[string]Position // where keys (and sequence items) are written
	vpos     map[string]Position // where values are written
	unset    map[string][]string
	merged   map[*yaml.Node][]entry // memo: keeps nested merge keys linear
	failed   map[string]bool        // paths with a reported problem
}

// A field decodes the value of one known key.
type field struct {
	key    string
	decode func(n *yaml.Node, path string)
}

type entry struct{ key, value *yaml.Node }

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	p := Problem{File: d.file, Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.problems = append(d.problems, p)
	d.failed[path] = true
}

func (d *decoder) mark(path string, n *yaml.Node) {
	d.pos[path] = Position{File: d.file, Line: n.Line, Column: n.Column}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse returns the root node, or nil for an empty file or a syntax error.
func (d *decoder) parse(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			d.syntaxError(err, data)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.errorf(&extra, "", "a second YAML document; the config is a single mapping")
	case !errors.Is(err, io.EOF):
		d.syntaxError(err, data)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return nil
}

// syntaxError reports a YAML syntax error. yaml.v3 gives no column and
// its line may be early (or missing, on the first line), so an unclosed
// bracket or a wrongly indented line is located in src (syntax.go);
// otherwise yaml's line is only a hint.
func (d *decoder) syntaxError(err error, src []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Problem{File: d.file}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if line, col, ok := locateTab(string(src)); ok && (p.Line == 0 || line >= p.Line) &&
		(line == p.Line || strings.Contains(msg, "tab character") || strings.Contains(msg, "cannot start any token")) {
		p.Line, p.Column = line, col
		p.Message = "YAML syntax error: a tab character indents this line; YAML indents with spaces only (" + msg + ")"
		d.problems = append(d.problems, p)
		return
	}
	var locate func(string) (int, int, string, bool)
	switch {
	case strings.HasPrefix(msg, "did not find expected ',' or"):
		locate = locateUnclosed
	case strings.Contains(msg, "unexpected end of stream"):
		// yaml's line is the quote's: the locator adds its column, and is
		// believed only when it agrees.
		locate = func(src string) (int, int, string, bool) {
			line, col, found, ok := locateQuote(src)
			return line, col, found, ok && (p.Line == 0 || p.Line == line)
		}
	case msg == "mapping values are not allowed in this context", msg == "did not find expected key":
		locate = locateIndent
	}
	if locate == nil {
		locate = func(string) (int, int, string, bool) { return 0, 0, "", false }
	}
	if line, col, found, ok := locate(string(src)); ok {
		p.Line, p.Column = line, col
		p.Message = "YAML syntax error: " + found + " (" + msg + ")"
		d.problems = append(d.problems, p)
		return
	}
	if msg == "mapping values are not allowed in this context" {
		msg += `; quote a value that holds ": " or ends in ":", e.g. store: "memory:"`
	}
	p.Message = "YAML syntax error: " + msg
	d.problems = append(d.problems, p)
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names what n is, for "expected X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// entries returns the key/value pairs of mapping n with merge keys (<<)
// expanded: explicit keys win over merged ones, earlier merges over later.
func (d *decoder) entries(n *yaml.Node, path string) []entry {
	var own, merged []entry
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "a key must be a string, got %s", describe(k))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeEntries(k, v, path)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, join(path, k.Value), "duplicate key; first written at line %d", first.Line)
			continue
		}
		seen[k.Value] = k
		own = append(own, entry{k, v})
	}
	for _, e := range merged {
		if _, ok := seen[e.key.Value]; !ok {
			seen[e.key.Value] = e.key
			own = append(own, e)
		}
	}
	return own
}

func (d *decoder) mergeEntries(k, v *yaml.Node, path string) []entry {
	v = resolve(v)
	var sources []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{v}
	case yaml.SequenceNode:
		for _, s := range v.Content {
			sources = append(sources, resolve(s))
		}
	default:
		sources = []*yaml.Node{v}
	}
	var out []entry
	for _, s := range sources {
		if s.Kind != yaml.MappingNode {
			d.errorf(k, path, "<< merges a mapping or a list of mappings, got %s", describe(s))
			continue
		}
		es, ok := d.merged[s]
		if !ok {
			es = d.entries(s, path)
			d.merged[s] = es
		}
		out = append(out, es...)
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// each calls fn for every entry of the mapping n, after recording where
// its key is written. A null n is an empty mapping.
func (d *decoder) each(n *yaml.Node, path string, fn func(key *yaml.Node, value *yaml.Node, path string)) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	for _, e := range d.entries(n, path) {
		p := join(path, e.key.Value)
		d.mark(p, e.key)
		d.vpos[p] = Position{File: d.file, Line: e.value.Line, Column: e.value.Column}
		fn(e.key, e.value, p)
	}
}

// mapping decodes a mapping with a fixed set of keys.
func (d *decoder) mapping(n *yaml.Node, path string, fields ...field) {
	d.each(n, path, func(k, v *yaml.Node, p string) {
		for _, f := range fields {
			if f.key == k.Value {
				f.decode(v, p)
				return
			}
		}
		// Top-level x- keys hold anchors for reuse, as in Compose files.
		if path == "" && strings.HasPrefix(k.Value, "x-") {
			return
		}
		keys := make([]string, len(fields))
		for i, f := range fields {
			keys[i] = f.key
		}
		if s := suggest(k.Value, keys); s != "" {
			d.errorf(k, p, "unknown key%s", s)
		} else {
			d.errorf(k, p, "unknown key (known keys: %s)", strings.Join(keys, ", "))
		}
	})
}

// scalar returns n as a scalar, or nil when n is null or not a scalar (the
// latter reported as expecting want).
func (d *decoder) scalar(n *yaml.Node, path, want string) *yaml.Node {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "expected %s, got %s", want, describe(n))
		return nil
	}
	return n
}

// text returns the scalar's value with ${VAR} expanded; ok is false after
// a reported expansion error.
func (d *decoder) text(n *yaml.Node, path string) (s string, ok bool) {
	if n.ShortTag() != "!!str" {
		return n.Value, true
	}
	s, unset, err := expand(n.Value, d.env)
	if err != nil {
		d.errorf(n, path, "%v", err)
		return "", false
	}
	if len(unset) > 0 {
		d.unset[path] = append(d.unset[path], unset...)
	}
	return s, true
}

func (d *decoder) str(dst *string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if n = d.scalar(n, path, "a string"); n == nil {
			return
		}
		if s, ok := d.text(n, path); ok {
			*dst = s
		}
	}
}

func (d *decoder) list(dst *[]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		n = resolve(n)
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, path, "expected a list, got %s", describe(n))
			return
		}
		*dst = []string{}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.mark(p, item)
			var s string
			d.str(&s)(item, p)
			*dst = append(*dst, s)
		}
	}
}

func (d *decoder) stringMap(dst *map[string]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		m := map[string]string{}
		d.each(n, path, func(k, v *yaml.Node, p string) {
			var s string
			d.str(&s)(v, p)
			m[k.Value] = s
		})
		*dst = m
	}
}

// number decodes a non-negative number. A quoted value is accepted only when
// it comes from ${VAR}, so max_rounds: "${ROUNDS:-10}" works but a typo such
// as max_rounds: ten does not.
func number[T int | int64 | float64](d *decoder, dst *T) func(*yaml.Node, string) {
	var zero T
	_, isFloat := any(zero).(float64)
	want := "an integer"
	if isFloat {
		want = "a number"
	}
	return func(n *yaml.Node, path string) {
		if n = d.scalar(n, path, want); n == nil {
			return
		}
		var v T
		tag := n.ShortTag()
		switch {
		case tag == "!!int" || (isFloat && tag == "!!float"):
			if err := n.Decode(&v); err != nil {
				d.errorf(n, path, "%s is out of range", n.Value)
				return
			}
		case tag == "!!str" && strings.Contains(n.Value, "$"):
			s, ok := d.text(n, path)
			if !ok {
				return
			}
			var err error
			v, err = parseNumber[T](s)
			if err != nil {
				d.errorf(n, path, "expected %s, got %q (from %s)", want, s, n.Value)
				return
			}
		default:
			d.errorf(n, path, "expected %s, got %q", want, n.Value)
			return
		}
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			d.errorf(n, path, "expected a finite number, got %s", n.Value)
			return
		}
		if v < 0 {
			d.errorf(n, path, "must not be negative, got %v", v)
			return
		}
		*dst = v
	}
}

func parseNumber[T int | int64 | float64](s string) (T, error) {
	var zero T
	if _, ok := any(zero).(float64); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return T(f), err
	}
	i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err == nil && T(i) != zero && int64(T(i)) != i {
		err = strconv.ErrRange
	}
	return T(i), err
}

// boolean decodes true or false (or a ${VAR} that expands to one).
func (d *decoder) boolean(dst **bool) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if n = d.scalar(n, path, "true or false"); n == nil {
			return
		}
		s, ok := d.text(n, path)
		if !ok {
			return
		}
		var v bool
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			v = true
		case "false":
			v = false
		default:
			d.errorf(n, path, "expected true or false, got %q", n.Value)
			return
		}
		*dst = &v
	}
}

func (d *decoder) duration(dst *Duration) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if n = d.scalar(n, path, "a duration"); n == nil {
			return
		}
		s, ok := d.text(n, path)
		if !ok {
			return
		}
		v, err := ParseDuration(s)
		if err != nil {
			d.errorf(n, path, "%v", err)
			return
		}
		*dst = v
	}
}

func (d *decoder) config(root *yaml.Node, c *Config) {
	root = resolve(root)
	if isNull(root) {
		return
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "", "the config must be a mapping with keys such as store, models and agents, got %s", describe(root))
		return
	}
	d.mapping(root, "",
		field{"store", d.str(&c.Store)},
		field{"tenant", d.str(&c.Tenant)},
		field{"lease_ttl", d.duration(&c.LeaseTTL)},
		field{"max_recoveries", number(d, &c.MaxRecoveries)},
		field{"control_poll", d.duration(&c.ControlPoll)},
		field{"default_agent", d.str(&c.DefaultAgentName)},
		field{"max_input_bytes", number(d, &c.MaxInputBytes)},
		field{"models", func(n *yaml.Node, path string) { c.Models = named(d, n, path, d.model) }},
		field{"mcp_servers", func(n *yaml.Node, path string) { c.MCPServers = named(d, n, path, d.mcpServer) }},
		field{"mcp_separator", d.str(&c.MCPSeparator)},
		field{"a2a_agents", func(n *yaml.Node, path string) { c.A2AAgents = named(d, n, path, d.a2aAgent) }},
		field{"agents", func(n *yaml.Node, path string) { c.Agents = named(d, n, path, d.agent) }},
		field{"server", func(n *yaml.Node, path string) { d.server(n, path, &c.Server) }},
		field{"gateway", func(n *yaml.Node, path string) { d.gateway(n, path, &c.Gateway) }},
		field{"channels", func(n *yaml.Node, path string) { c.Channels = named(d, n, path, d.channel) }},
		field{"engine", func(n *yaml.Node, path string) {
			d.str(&c.Engine)(n, path)
			switch c.Engine {
			case "", EngineLocal, EngineTemporal:
			default:
				engines := []string{EngineLocal, EngineTemporal}
				d.errorf(n, path, "unknown engine %q%s (want %s)", c.Engine, suggest(c.Engine, engines), strings.Join(engines, " or "))
			}
		}},
		field{"temporal", func(n *yaml.Node, path string) {
			t := &c.Temporal
			d.mapping(n, path,
				field{"address", d.str(&t.Address)},
				field{"namespace", d.str(&t.Namespace)},
				field{"task_queue", d.str(&t.TaskQueue)},
				field{"step_timeout", d.duration(&t.StepTimeout)},
				field{"heartbeat_timeout", d.duration(&t.HeartbeatTimeout)},
				field{"tls", func(n *yaml.Node, path string) {
					t.TLS = &TemporalTLS{}
					d.mapping(n, path,
						field{"cert", d.str(&t.TLS.Cert)},
						field{"key", d.str(&t.TLS.Key)},
						field{"ca", d.str(&t.TLS.CA)},
						field{"server_name", d.str(&t.TLS.ServerName)},
					)
					if (t.TLS.Cert == "") != (t.TLS.Key == "") {
						d.errorf(n, path, "cert and key go together (a client certificate and its key)")
					}
				}},
			)
			if t.Address != "" {
				if _, _, err := net.SplitHostPort(t.Address); err != nil {
					d.errorf(n, path+".address", "address %q: want host:port (127.0.0.1:7233)", t.Address)
				}
			}
		}},
	)
}

func (d *decoder) channel(n *yaml.Node, path string, ch *Channel) {
	d.mapping(n, path, append(d.gatewaySettings(&ch.GatewaySettings),
		field{"kind", func(n *yaml.Node, path string) {
			d.str(&ch.Kind)(n, path)
			if !slices.Contains(ChannelKinds, ch.Kind) {
				d.errorf(n, path, "unknown kind %q%s (want %s)", ch.Kind, suggest(ch.Kind, ChannelKinds), strings.Join(ChannelKinds, ", "))
			}
		}},
		field{"agent", d.str(&ch.Agent)},
		field{"allow", d.list(&ch.Allow)},
		field{"refusal", d.str(&ch.Refusal)},
		field{"approvers", d.list(&ch.Approvers)},
		field{"ack_within", d.duration(&ch.AckWithin)},
		field{"stream", d.boolean(&ch.Stream)},
		field{"stream_every", d.duration(&ch.StreamEvery)},
		field{"api_url", d.str(&ch.APIURL)},
		field{"bot_token", d.str(&ch.BotToken)},
		field{"secret_token", d.str(&ch.SecretToken)},
		field{"signing_secret", d.str(&ch.SigningSecret)},
		field{"secret", d.str(&ch.Secret)},
		field{"reply_url", d.str(&ch.ReplyURL)},
		field{"access_token", d.str(&ch.AccessToken)},
		field{"app_secret", d.str(&ch.AppSecret)},
		field{"verify_token", d.str(&ch.VerifyToken)},
		field{"phone_number_id", d.str(&ch.PhoneNumberID)},
		field{"public_key", d.str(&ch.PublicKey)},
	)...)
}

// gatewaySettings are the fields of the settings an agent or a source
// may override.
func (d *decoder) gatewaySettings(s *GatewaySettings) []field {
	return []field{
		{"debounce", d.duration(&s.Debounce)},
		{"max_wait", d.duration(&s.MaxWait)},
		{"policy", func(n *yaml.Node, path string) {
			d.str(&s.Policy)(n, path)
			switch s.Policy {
			case "", GatewayInterrupt, GatewayQueue, GatewaySteer, GatewayReject:
			default:
				policies := []string{GatewayInterrupt, GatewayQueue, GatewaySteer, GatewayReject}
				d.errorf(n, path, "unknown policy %q%s (want %s)", s.Policy, suggest(s.Policy, policies), strings.Join(policies, ", "))
			}
		}},
		{"max_pending", number(d, &s.MaxPending)},
		{"max_pending_bytes", number(d, &s.MaxPendingBytes)},
		{"max_restarts", number(d, &s.MaxRestarts)},
		{"prompts", func(n *yaml.Node, path string) {
			d.str(&s.Prompts)(n, path)
			switch s.Prompts {
			case "", GatewayPromptsAnswer, GatewayPromptsPolicy:
			default:
				d.errorf(n, path, "unknown prompts %q (want %s or %s)", s.Prompts, GatewayPromptsAnswer, GatewayPromptsPolicy)
			}
		}},
	}
}

func (d *decoder) gateway(n *yaml.Node, path string, g *Gateway) {
	d.mapping(n, path, append(d.gatewaySettings(&g.GatewaySettings),
		field{"workers", number(d, &g.Workers)},
		field{"poll", d.duration(&g.Poll)},
		field{"sources", func(n *yaml.Node, path string) {
			g.Sources = named(d, n, path, func(n *yaml.Node, path string, s *GatewaySource) {
				d.mapping(n, path, append(d.gatewaySettings(&s.GatewaySettings),
					field{"session", d.str(&s.Session)})...)
			})
		}},
	)...)
}

// named decodes a mapping from user-chosen names to T.
func named[T any](d *decoder, n *yaml.Node, path string, decode func(n *yaml.Node, path string, v *T)) map[string]T {
	m := map[string]T{}
	d.each(n, path, func(k, v *yaml.Node, p string) {
		var t T
		decode(v, p, &t)
		m[k.Value] = t
	})
	return m
}

func (d *decoder) model(n *yaml.Node, path string, m *Model) {
	d.mapping(n, path,
		field{"provider", d.str(&m.Provider)},
		field{"model", d.str(&m.Model)},
		field{"base_url", d.str(&m.BaseURL)},
		field{"api_key", d.str(&m.APIKey)},
		field{"script", d.str(&m.Script)},
		field{"headers", d.stringMap(&m.Headers)},
		field{"stream", d.boolean(&m.Stream)},
		field{"media", func(n *yaml.Node, path string) {
			d.list(&m.Media)(n, path)
			for _, t := range m.Media {
				kind, sub, ok := strings.Cut(t, "/")
				if !ok || kind == "" || sub == "" || strings.ContainsAny(t, " ;,") {
					d.errorf(n, path, "%q is not a media type (image/png) or a kind of them (image/*)", t)
				}
			}
		}},
		field{"inline_tool_calls", func(n *yaml.Node, path string) {
			d.str(&m.InlineToolCalls)(n, path)
			switch m.InlineToolCalls {
			case "", "auto", "on", "off":
			default:
				d.errorf(n, path, "%q: want auto, on or off", m.InlineToolCalls)
			}
		}},
		field{"price", func(n *yaml.Node, path string) {
			if isNull(resolve(n)) {
				return
			}
			m.Price = &Price{}
			d.mapping(n, path,
				field{"input", number(d, &m.Price.InputPerMTok)},
				field{"output", number(d, &m.Price.OutputPerMTok)},
				field{"cached", number(d, &m.Price.CachedPerMTok)},
			)
		}},
	)
}

func (d *decoder) mcpServer(n *yaml.Node, path string, s *MCPServer) {
	d.mapping(n, path,
		field{"command", d.str(&s.Command)},
		field{"args", d.list(&s.Args)},
		field{"env", d.stringMap(&s.Env)},
		field{"dir", d.str(&s.Dir)},
		field{"url", d.str(&s.URL)},
		field{"headers", d.stringMap(&s.Headers)},
		field{"timeout", d.duration(&s.Timeout)},
	)
}

func (d *decoder) a2aAgent(n *yaml.Node, path string, a *A2AAgent) {
	d.mapping(n, path,
		field{"url", d.str(&a.URL)},
		field{"description", d.str(&a.Description)},
		field{"headers", d.stringMap(&a.Headers)},
		field{"timeout", d.duration(&a.Timeout)},
	)
}

func (d *decoder) agent(n *yaml.Node, path string, a *Agent) {
	d.mapping(n, path,
		field{"model", d.str(&a.Model)},
		field{"fallback_models", d.list(&a.FallbackModels)},
		field{"profile", func(n *yaml.Node, path string) {
			p := &a.Profile
			d.mapping(n, path,
				field{"name", d.str(&p.Name)},
				field{"role", d.str(&p.Role)},
				field{"goal", d.str(&p.Goal)},
				field{"backstory", d.str(&p.Backstory)},
				field{"language", d.str(&p.Language)},
				field{"tone", d.str(&p.Tone)},
			)
		}},
		field{"instructions", d.str(&a.Instructions)},
		field{"description", d.str(&a.Description)},
		field{"strategy", d.str(&a.Strategy)},
		field{"plan", func(n *yaml.Node, path string) {
			p := &a.Plan
			d.mapping(n, path,
				field{"max_steps", number(d, &p.MaxSteps)},
				field{"summarizer", d.str(&p.Summarizer)},
				field{"structured_output", d.boolean(&p.StructuredOutput)},
				field{"replan", func(n *yaml.Node, path string) {
					d.str(&p.Replan)(n, path)
					if p.Replan != "" && p.Replan != "never" && p.Replan != "on_failure" {
						d.errorf(n, path, "%q: want never or on_failure", p.Replan)
					}
				}},
			)
		}},
		field{"stream", d.boolean(&a.Stream)},
		field{"tools", d.list(&a.Tools)},
		field{"approval", func(n *yaml.Node, path string) {
			d.mapping(n, path,
				field{"default", d.str(&a.Approval.Default)},
				field{"ask", d.list(&a.Approval.Ask)},
				field{"deny", d.list(&a.Approval.Deny)},
				field{"expires", d.duration(&a.Approval.Expires)},
				field{"auto_when_delegated", d.boolean(&a.Approval.AutoWhenDelegated)},
				field{"expires_for", func(n *yaml.Node, path string) {
					m := map[string]Duration{}
					d.each(n, path, func(k, v *yaml.Node, p string) {
						var dur Duration
						d.duration(&dur)(v, p)
						m[k.Value] = dur
					})
					a.Approval.ExpiresFor = m
				}},
			)
		}},
		field{"limits", func(n *yaml.Node, path string) {
			l := &a.Limits
			d.mapping(n, path,
				field{"max_rounds", number(d, &l.MaxRounds)},
				field{"max_steps", number(d, &l.MaxSteps)},
				field{"max_tokens", number(d, &l.MaxTokens)},
				field{"max_cost_usd", number(d, &l.MaxCostUSD)},
				field{"session_max_tokens", number(d, &l.SessionMaxTokens)},
				field{"session_max_cost_usd", number(d, &l.SessionMaxCostUSD)},
				field{"max_turn_duration", d.duration(&l.MaxTurnDuration)},
			)
		}},
		field{"timeouts", func(n *yaml.Node, path string) {
			t := &a.Timeouts
			d.mapping(n, path,
				field{"first_feedback", d.duration(&t.FirstFeedback)},
				field{"first_chunk", d.duration(&t.FirstChunk)},
				field{"idle", d.duration(&t.Idle)},
				field{"hard", d.duration(&t.Hard)},
				field{"tool", d.duration(&t.Tool)},
				field{"tools", func(n *yaml.Node, path string) {
					m := map[string]Duration{}
					d.each(n, path, func(k, v *yaml.Node, p string) {
						var dur Duration
						d.duration(&dur)(v, p)
						if dur == 0 {
							d.errorf(v, p, "a tool's timeout must be positive")
						}
						m[k.Value] = dur
					})
					t.Tools = m
				}},
			)
		}},
		field{"compaction", func(n *yaml.Node, path string) { d.compaction(n, path, &a.Compaction) }},
		field{"memory", func(n *yaml.Node, path string) {
			m := &a.Memory
			d.mapping(n, path,
				field{"enabled", d.boolean(&m.Enabled)},
				field{"remember_turns", d.boolean(&m.RememberTurns)},
			)
		}},
		field{"gateway", func(n *yaml.Node, path string) { d.mapping(n, path, d.gatewaySettings(&a.Gateway)...) }},
		field{"loop_detection", func(n *yaml.Node, path string) {
			l := &a.LoopDetection
			d.mapping(n, path,
				field{"warning", number(d, &l.Warning)},
				field{"critical", number(d, &l.Critical)},
				field{"off", d.boolean(&l.Off)},
			)
			w, c := cmp.Or(l.Warning, DefaultLoopWarning), cmp.Or(l.Critical, DefaultLoopCritical)
			if (l.Off == nil || !*l.Off) && w >= c {
				d.errorf(n, path, "warning (%d) must be below critical (%d)", w, c)
			}
		}},
	)
}

// compaction decodes compaction: off (or false), on (or true: the
// defaults), or a mapping of limits, which may hold off: true alone.
func (d *decoder) compaction(n *yaml.Node, path string, c *Compaction) {
	if r := resolve(n); r.Kind == yaml.ScalarNode && !isNull(r) {
		s, ok := d.text(r, path)
		if !ok {
			return
		}
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "off", "false":
			c.Off = true
		case "on", "true":
		default:
			d.errorf(r, path, "expected off, on or a mapping such as {max_messages: 40}, got %q", r.Value)
		}
		return
	}
	var off *bool
	d.mapping(n, path,
		field{"off", d.boolean(&off)},
		field{"max_messages", number(d, &c.MaxMessages)},
		field{"max_chars", number(d, &c.MaxChars)},
		field{"max_tokens", number(d, &c.MaxTokens)},
		field{"keep_recent", number(d, &c.KeepRecent)},
		field{"model", d.str(&c.Model)},
	)
	c.Off = off != nil && *off
	if c.Off && (c.MaxMessages > 0 || c.MaxChars > 0 || c.MaxTokens > 0 || c.KeepRecent > 0 || c.Model != "") {
		d.errorf(n, path, "off with settings: compaction is either off or configured, not both")
	}
}

func (d *decoder) server(n *yaml.Node, path string, s *Server) {
	var oldCORS, newCORS *yaml.Node // server.cors_origins, server.cors.allowed_origins
	d.mapping(n, path,
		field{"addr", d.str(&s.Addr)},
		field{"api_keys_file", d.str(&s.APIKeysFile)},
		field{"max_body_bytes", number(d, &s.MaxBodyBytes)},
		field{"max_json_depth", number(d, &s.MaxJSONDepth)},
		field{"request_timeout", d.duration(&s.RequestTimeout)},
		field{"read_timeout", d.duration(&s.ReadTimeout)},
		field{"heartbeat", d.duration(&s.Heartbeat)},
		field{"client_buffer", number(d, &s.ClientBuffer)},
		field{"write_timeout", d.duration(&s.WriteTimeout)},
		field{"max_streams", number(d, &s.MaxStreams)},
		field{"max_connections", number(d, &s.MaxConnections)},
		field{"allowed_hosts", d.list(&s.AllowedHosts)},
		field{"trusted_proxy", d.boolean(&s.TrustedProxy)},
		field{"cors", func(n *yaml.Node, path string) {
			d.mapping(n, path, field{"allowed_origins", func(n *yaml.Node, path string) {
				if oldCORS != nil {
					d.errorf(n, path, "server.cors_origins (its old name) is given too; keep only server.cors.allowed_origins")
					return
				}
				d.list(&s.CORS.AllowedOrigins)(n, path)
				newCORS = n
			}})
		}},
		// The old name of cors.allowed_origins, still read.
		field{"cors_origins", func(n *yaml.Node, path string) {
			if newCORS != nil {
				d.errorf(n, path, "server.cors.allowed_origins is given too; keep only server.cors.allowed_origins (cors_origins is its old name)")
				return
			}
			d.list(&s.CORS.AllowedOrigins)(n, path)
			oldCORS = n
		}},
		field{"shutdown_grace", d.duration(&s.ShutdownGrace)},
		field{"sweep_every", d.duration(&s.SweepEvery)},
		field{"ui", func(n *yaml.Node, path string) {
			var off *bool
			d.mapping(n, path,
				field{"disabled", d.boolean(&off)},
				field{"secret", d.str(&s.UI.Secret)},
			)
			s.UI.Disabled = off != nil && *off
		}},
		field{"fetch", func(n *yaml.Node, path string) {
			d.mapping(n, path,
				field{"allowed_hosts", d.list(&s.Fetch.AllowedHosts)},
				field{"allowed_networks", d.list(&s.Fetch.AllowedNetworks)},
				field{"timeout", d.duration(&s.Fetch.Timeout)},
			)
		}},
		field{"a2a", func(n *yaml.Node, path string) {
			d.mapping(n, path,
				field{"public_url", d.str(&s.A2A.PublicURL)},
				field{"allow_private_webhooks", d.boolean(&s.A2A.AllowPrivateWebhooks)},
			)
		}},
		field{"api_keys", func(n *yaml.Node, path string) {
			n = resolve(n)
			if isNull(n) {
				return
			}
			if n.Kind != yaml.SequenceNode {
				d.errorf(n, path, "expected a list, got %s", describe(n))
				return
			}
			s.APIKeys = []APIKey{}
			for i, item := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				d.mark(p, item)
				var k APIKey
				d.mapping(item, p,
					field{"key", d.str(&k.Key)},
					field{"hash", d.str(&k.Hash)},
					field{"tenant", d.str(&k.Tenant)},
					field{"principal", d.str(&k.Principal)},
					field{"rate", number(d, &k.Rate)},
					field{"burst", number(d, &k.Burst)},
					field{"max_streams", number(d, &k.MaxStreams)},
				)
				s.APIKeys = append(s.APIKeys, k)
			}
		}},
	)
}
