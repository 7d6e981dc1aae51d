package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base is a valid config the problem cases below add to; its last line is 4.
const base = `models:
  m: {provider: demo}
agents:
  a: {model: m}
`

func TestProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want string
	}{
		{
			name: "unknown key with suggestion",
			src: base + `  b:
    model: m
    limits: {max_round: 3}
`,
			want: "agentrt.yaml:7:14: agents.b.limits.max_round: unknown key; did you mean max_rounds?",
		},
		{
			name: "unknown key, other spelling",
			src:  "store: \"memory:\"\nModels: {}\n",
			want: "agentrt.yaml:2:1: Models: unknown key; did you mean models?",
		},
		{
			name: "unknown key without a close one lists the known keys",
			src:  base + "  b: {model: m, loop_detection: {zzz: 1}}\n",
			want: "agentrt.yaml:5:34: agents.b.loop_detection.zzz: unknown key (known keys: warning, critical, off)",
		},
		{
			name: "integer expected",
			src: base + `  b:
    model: m
    limits:
      max_rounds: ten
`,
			want: `agentrt.yaml:8:19: agents.b.limits.max_rounds: expected an integer, got "ten"`,
		},
		{
			name: "quoted number is a string",
			src:  base + "  b: {model: m, compaction: {keep_recent: \"8\"}}\n",
			want: `agentrt.yaml:5:43: agents.b.compaction.keep_recent: expected an integer, got "8"`,
		},
		{
			name: "float where an integer goes",
			src:  base + "  b: {model: m, limits: {max_steps: 1.5}}\n",
			want: `agentrt.yaml:5:37: agents.b.limits.max_steps: expected an integer, got "1.5"`,
		},
		{
			name: "mapping where a string goes",
			src:  base + "  b: {model: {name: m}}\n",
			want: "agentrt.yaml:5:14: agents.b.model: expected a string, got a mapping",
		},
		{
			name: "string where a list goes",
			src:  base + "  b: {model: m, tools: calculator}\n",
			want: `agentrt.yaml:5:24: agents.b.tools: expected a list, got "calculator"`,
		},
		{
			name: "list where a mapping goes",
			src:  "models: [m]\n",
			want: "agentrt.yaml:1:9: models: expected a mapping, got a list",
		},
		{
			name: "number from an unset variable",
			src:  base + "  b: {model: m, limits: {max_tokens: \"${MAXTOK}\"}}\n",
			want: `agentrt.yaml:5:38: agents.b.limits.max_tokens: expected an integer, got "" (from ${MAXTOK})`,
		},
		{
			name: "bad duration",
			src:  base + "  b: {model: m, timeouts: {idle: 8 seconds}}\n",
			want: `agentrt.yaml:5:34: agents.b.timeouts.idle: bad duration "8 seconds": want a Go duration such as "8s" or "2m", or whole seconds`,
		},
		{
			name: "negative duration",
			src:  base + "  b: {model: m, timeouts: {hard: -5s}}\n",
			want: `agentrt.yaml:5:34: agents.b.timeouts.hard: duration "-5s" is negative`,
		},
		{
			name: "negative limit",
			src:  base + "  b: {model: m, limits: {max_cost_usd: -0.5}}\n",
			want: "agentrt.yaml:5:40: agents.b.limits.max_cost_usd: must not be negative, got -0.5",
		},
		{
			name: "unknown compaction model",
			src:  base + "  b: {model: m, compaction: {max_messages: 30, model: smal}}\n",
			want: `agentrt.yaml:5:55: agents.b.compaction.model: unknown model "smal" (models: m)`,
		},
		{
			name: "bad inline_tool_calls",
			src:  "models:\n  m: {provider: demo, inline_tool_calls: yes}\n",
			want: `agentrt.yaml:2:42: models.m.inline_tool_calls: "yes": want auto, on or off`,
		},
		{
			name: "bad replan",
			src:  base + "  b: {model: m, strategy: plan_execute, plan: {replan: always}}\n",
			want: `agentrt.yaml:5:56: agents.b.plan.replan: "always": want never or on_failure`,
		},
		{
			name: "zero tool timeout",
			src:  base + "  b: {model: m, timeouts: {tools: {search: 0s}}}\n",
			want: "agentrt.yaml:5:44: agents.b.timeouts.tools.search: a tool's timeout must be positive",
		},
		{
			name: "loop warning not below critical",
			src:  base + "  b: {model: m, loop_detection: {warning: 9}}\n",
			want: "agentrt.yaml:5:33: agents.b.loop_detection: warning (9) must be below critical (8)",
		},
		{
			name: "negative loop threshold",
			src:  base + "  b: {model: m, loop_detection: {critical: -2}}\n",
			want: "agentrt.yaml:5:44: agents.b.loop_detection.critical: must not be negative, got -2",
		},
		{
			name: "negative price",
			src:  "models:\n  m: {provider: demo, price: {input: -1, output: 2}}\n",
			want: "agentrt.yaml:2:38: models.m.price.input: must not be negative, got -1",
		},
		{
			name: "unknown provider",
			src:  "models:\n  m: {provider: antropic}\n",
			want: `agentrt.yaml:2:17: models.m.provider: unknown provider "antropic"; did you mean anthropic? (known: openai, anthropic, scripted, demo, auto)`,
		},
		{
			name: "missing provider",
			src:  "models:\n  m: {model: gpt-4o}\n",
			want: "agentrt.yaml:2:3: models.m: provider is required (one of openai, anthropic, scripted, demo, auto)",
		},
		{
			name: "price written where a model goes",
			src:  "models:\n  m: {provider: demo}\n  price:\n",
			want: "agentrt.yaml:3:3: models.price: provider is required; if this was meant as prices, " +
				"price goes inside a model entry: models.NAME.price: {input: 0.15, output: 0.6}",
		},
		{
			name: "scripted model without script",
			src:  "models:\n  test: {provider: scripted}\n",
			want: "agentrt.yaml:2:3: models.test: script is required for provider scripted: the file of scripted replies",
		},
		{
			name: "openai model without model name",
			src:  "models:\n  main: {provider: openai, api_key: k}\n",
			want: "agentrt.yaml:2:3: models.main: model is required for provider openai",
		},
		{
			name: "agent model names no model",
			src:  base + "  b:\n    model: mm\n",
			want: `agentrt.yaml:6:12: agents.b.model: unknown model "mm"; did you mean m? (models: m)`,
		},
		{
			name: "agent without model",
			src:  base + "  b: {tools: [clock]}\n",
			want: "agentrt.yaml:5:3: agents.b: model is required: name an entry of models",
		},
		{
			name: "agent model from an unset variable",
			src:  base + "  b: {model: \"${AGENT_MODEL}\"}\n",
			want: "agentrt.yaml:5:3: agents.b: model is empty because ${AGENT_MODEL} is not set: name an entry of models",
		},
		{
			name: "fallback model names no model",
			src:  base + "  b:\n    model: m\n    fallback_models:\n      - m\n      - claude\n",
			want: `agentrt.yaml:9:9: agents.b.fallback_models[1]: unknown model "claude" (models: m)`,
		},
		{
			name: "unknown strategy",
			src:  base + "  b: {model: m, strategy: plan-execute}\n",
			want: `agentrt.yaml:5:27: agents.b.strategy: unknown strategy "plan-execute"; did you mean plan_execute? (known: react, plan_execute)`,
		},
		{
			name: "unknown approval default",
			src:  base + "  b: {model: m, approval: {default: never}}\n",
			want: `agentrt.yaml:5:37: agents.b.approval.default: unknown approval "never": want auto, ask or deny`,
		},
		{
			name: "bad tool pattern",
			src:  base + "  b: {model: m, approval: {deny: [\"fs.[\"]}}\n",
			want: `agentrt.yaml:5:35: agents.b.approval.deny[0]: bad pattern "fs.[": syntax error in pattern`,
		},
		{
			name: "tool that is not a string is reported once",
			src:  base + "  b: {model: m, tools: [{name: clock}]}\n",
			want: `agentrt.yaml:5:25: agents.b.tools[0]: expected a string, got a mapping`,
		},
		{
			name: "empty fallback model",
			src:  base + "  b: {model: m, fallback_models: [\"\"]}\n",
			want: `agentrt.yaml:5:35: agents.b.fallback_models[0]: model name is required`,
		},
		{
			name: "empty tool name",
			src:  base + "  b: {model: m, tools: [clock, \"\"]}\n",
			want: `agentrt.yaml:5:32: agents.b.tools[1]: tool name is required`,
		},
		{
			name: "bad agent name",
			src:  base + "  my agent: {model: m}\n",
			want: `agentrt.yaml:5:3: agents.my agent: bad agent name "my agent": agents can be tools of other agents, so use letters, digits, _ and - (at most 64)`,
		},
		{
			name: "bad store scheme",
			src:  "store: mysql://u:secret@h/db\n",
			want: `agentrt.yaml:1:8: store: unknown store "mysql:": want sqlite:PATH, postgres://…, postgresql://… or memory:`,
		},
		{
			name: "sqlite without path",
			src:  "store: \"sqlite:\"\n",
			want: "agentrt.yaml:1:8: store: sqlite: needs a file path, e.g. sqlite:.agentrt/agentrt.db",
		},
		{
			name: "bad postgres URL does not repeat the password",
			src:  "store: \"postgres://u:secret@h:port/db\"\n",
			want: `agentrt.yaml:1:8: store: bad postgres URL: invalid port ":port" after host`,
		},
		{
			name: "store from an unset variable",
			src:  "store: ${DATABASE_URL}\n",
			want: "agentrt.yaml:1:1: store: store is empty because ${DATABASE_URL} is not set",
		},
		{
			name: "relative base_url",
			src:  "models:\n  m: {provider: openai, model: x, base_url: 127.0.0.1:11434/v1}\n",
			want: `agentrt.yaml:2:45: models.m.base_url: bad URL "127.0.0.1:11434/v1": first path segment in URL cannot contain colon`,
		},
		{
			name: "base_url not http",
			src:  "models:\n  m: {provider: openai, model: x, base_url: \"ftp://h/v1\"}\n",
			want: `agentrt.yaml:2:45: models.m.base_url: bad URL "ftp://h/v1": want an absolute http:// or https:// URL`,
		},
		{
			name: "mcp server with both command and url",
			src:  "mcp_servers:\n  fs: {command: npx, url: \"http://h/mcp\"}\n",
			want: "agentrt.yaml:2:3: mcp_servers.fs: has both command and url; keep one",
		},
		{
			name: "mcp server with neither",
			src:  "mcp_servers:\n  fs: {args: [x]}\n",
			want: "agentrt.yaml:2:3: mcp_servers.fs: needs command (a program to start) or url (a running server)",
		},
		{
			name: "mcp url from an unset variable",
			src:  "mcp_servers:\n  fs: {url: \"${MCP_URL}\"}\n",
			want: "agentrt.yaml:2:3: mcp_servers.fs: url is empty because ${MCP_URL} is not set",
		},
		{
			name: "server addr without port",
			src:  "server: {addr: localhost}\n",
			want: `agentrt.yaml:1:16: server.addr: bad address "localhost": want host:port, e.g. 127.0.0.1:8080`,
		},
		{
			name: "api key without tenant",
			src:  "server:\n  api_keys:\n    - {key: k}\n",
			want: "agentrt.yaml:3:7: server.api_keys[0]: tenant is required",
		},
		{
			name: "api key and its hash",
			src:  "server:\n  api_keys:\n    - {key: k, hash: \"sha256:0000000000000000000000000000000000000000000000000000000000000000\", tenant: a}\n",
			want: "agentrt.yaml:3:7: server.api_keys[0]: give the key or its hash, not both",
		},
		{
			name: "api key hash malformed",
			src:  "server:\n  api_keys:\n    - {hash: \"md5:abc\", tenant: a}\n",
			want: `agentrt.yaml:3:14: server.api_keys[0].hash: bad hash "md5:abc": want "sha256:" and 64 hex digits (agentrt keys hash KEY prints it)`,
		},
		{
			name: "api key tenant unusable",
			src:  "server:\n  api_keys:\n    - {key: k, tenant: \"a b\"}\n",
			want: `agentrt.yaml:3:24: server.api_keys[0].tenant: tenant "a b": want only letters, digits, '_', '.' and '-'`,
		},
		{
			name: "api key negative rate",
			src:  "server:\n  api_keys:\n    - {key: k, tenant: a, rate: -1}\n",
			want: "agentrt.yaml:3:33: server.api_keys[0].rate: must not be negative, got -1",
		},
		{
			name: "inspector secret too short",
			src:  "server:\n  ui: {secret: short}\n",
			want: `agentrt.yaml:2:16: server.ui.secret: the secret is 5 bytes: give at least 32 (e.g. openssl rand -hex 32), or none for a random one each start`,
		},
		{
			name: "inspector disabled not a boolean",
			src:  "server:\n  ui: {disabled: sometimes}\n",
			want: `agentrt.yaml:2:18: server.ui.disabled: expected true or false, got "sometimes"`,
		},
		{
			name: "allowed host with a scheme",
			src:  "server:\n  allowed_hosts: [ok.example, \"https://agents.example.com\"]\n",
			want: `agentrt.yaml:2:31: server.allowed_hosts[1]: bad host "https://agents.example.com": want a host name or address, optionally with a port, e.g. agents.example.com or agents.example.com:8443`,
		},
		{
			name: "fetch host with a scheme",
			src:  "server:\n  fetch: {allowed_hosts: [\"*\", \"https://x.example\"]}\n",
			want: `agentrt.yaml:2:32: server.fetch.allowed_hosts[1]: bad host "https://x.example": want a name (images.example.com), *.example.com, an address, or *`,
		},
		{
			name: "fetch network that is none",
			src:  "server:\n  fetch: {allowed_networks: [10.0.0.0/33]}\n",
			want: `agentrt.yaml:2:30: server.fetch.allowed_networks[0]: bad network "10.0.0.0/33": want an address or one in CIDR form, e.g. 10.1.2.0/24`,
		},
		{
			name: "fetch key unknown",
			src:  "server:\n  fetch: {allow_hosts: [x.example]}\n",
			want: `agentrt.yaml:2:11: server.fetch.allow_hosts: unknown key; did you mean allowed_hosts?`,
		},
		{
			name: "cors origin with a path",
			src:  "server:\n  cors: {allowed_origins: [\"https://app.example.com/ui\"]}\n",
			want: `agentrt.yaml:2:28: server.cors.allowed_origins[0]: bad origin "https://app.example.com/ui": an origin has no path, query or fragment: https://app.example.com (or "*" for any, with API keys)`,
		},
		{
			name: "cors origin without a scheme, by the old name",
			src:  "server:\n  cors_origins: [app.example.com]\n",
			want: `agentrt.yaml:2:18: server.cors_origins[0]: bad origin "app.example.com": want scheme://host[:port], e.g. https://app.example.com (or "*" for any, with API keys)`,
		},
		{
			name: "cors origins by both names",
			src:  "server:\n  cors_origins: [\"https://a.example\"]\n  cors: {allowed_origins: [\"https://b.example\"]}\n",
			want: `agentrt.yaml:3:27: server.cors.allowed_origins: server.cors_origins (its old name) is given too; keep only server.cors.allowed_origins`,
		},
		{
			name: "any cors origin without keys",
			src:  "server:\n  cors: {allowed_origins: [\"https://a.example\", \"*\"]}\n",
			want: `agentrt.yaml:2:49: server.cors.allowed_origins[1]: "*" without API keys would let every web page the user opens drive this server; list the origins, or configure server.api_keys`,
		},
		{
			name: "trusted_proxy not a boolean",
			src:  "server: {trusted_proxy: yes please}\n",
			want: `agentrt.yaml:1:25: server.trusted_proxy: expected true or false, got "yes please"`,
		},
		{
			name: "server bad duration",
			src:  "server: {request_timeout: soon}\n",
			want: `agentrt.yaml:1:27: server.request_timeout: bad duration "soon": want a Go duration such as "8s" or "2m", or whole seconds`,
		},
		{
			name: "server bad read timeout",
			src:  "server: {read_timeout: -3s}\n",
			want: `agentrt.yaml:1:24: server.read_timeout: duration "-3s" is negative`,
		},
		{
			name: "duplicate key",
			src:  base + "  b:\n    model: m\n    tools: [clock]\n    model: m\n",
			want: "agentrt.yaml:8:5: agents.b.model: duplicate key; first written at line 6",
		},
		{
			name: "duplicate name",
			src:  base + "  a: {model: m}\n",
			want: "agentrt.yaml:5:3: agents.a: duplicate key; first written at line 4",
		},
		{
			name: "document is a list",
			src:  "- models\n- agents\n",
			want: "agentrt.yaml:1:1: the config must be a mapping with keys such as store, models and agents, got a list",
		},
		{
			name: "document is a string",
			src:  "hello\n",
			want: `agentrt.yaml:1:1: the config must be a mapping with keys such as store, models and agents, got "hello"`,
		},
		{
			name: "two documents",
			src:  base + "---\nstore: sqlite:x.db\n",
			want: "agentrt.yaml:5:1: a second YAML document; the config is a single mapping",
		},
		{
			name: "YAML syntax error",
			src:  "models:\n  m: {provider: demo\n",
			want: "agentrt.yaml:2:6: YAML syntax error: the { opened here is never closed: add } (did not find expected ',' or '}')",
		},
		{
			name: "unknown model and no models",
			src:  "agents:\n  a: {model: gpt4}\n",
			want: `agentrt.yaml:2:14: agents.a.model: unknown model "gpt4": the file has no models; use auto (the first model agentrt finds), demo, or add models.gpt4 with a provider`,
		},
		{
			name: "unclosed quote",
			src:  "agents:\n  a:\n    instructions: \"be nice\n    model: auto\n",
			want: "agentrt.yaml:3:19: YAML syntax error: the \" opened here is never closed (found unexpected end of stream)",
		},
		{
			name: "a value over two lines, then the real mistake",
			src:  "agents:\n  a:\n    instructions: You are a very\n      helpful assistant\nstore: memory:x: y\n",
			want: "agentrt.yaml:5: YAML syntax error: mapping values are not allowed in this context; quote a value that holds \": \" or ends in \":\", e.g. store: \"memory:\"",
		},
		{
			name: "an anchor opens a block",
			src:  "base: &b\n  model: auto\nstore: a: b\n",
			want: "agentrt.yaml:3: YAML syntax error: mapping values are not allowed in this context; quote a value that holds \": \" or ends in \":\", e.g. store: \"memory:\"",
		},
		{
			name: "block text is not scanned for quotes",
			src:  "agents:\n  a:\n    instructions: |\n      'tis the season\n    model: auto\nstore: \"memory\n",
			want: "agentrt.yaml:6:8: YAML syntax error: the \" opened here is never closed (found unexpected end of stream)",
		},
		{
			name: "block text is not scanned for brackets",
			src:  "agents:\n  a:\n    instructions: |\n      [draft]\n    tools: [clock\n",
			want: "agentrt.yaml:5:12: YAML syntax error: the [ opened here is never closed: add ] (did not find expected ',' or ']')",
		},
		{
			name: "unclosed list before more keys",
			src:  "agents:\n  a:\n    tools: [calculator, clock\n    instructions: hi\n",
			want: "agentrt.yaml:3:12: YAML syntax error: the [ opened here is never closed: add ] (did not find expected ',' or ']')",
		},
		{
			name: "bracket closed by the wrong one",
			src:  "agents:\n  a: {tools: [clock}, model: m]\n",
			want: "agentrt.yaml:2:14: YAML syntax error: the [ opened here is closed by } at line 2, column 20; expected ] (did not find expected ',' or ']')",
		},
		{
			name: "key lining up with nothing",
			src:  "models:\n  m:\n    provider: openai\n   model: gpt\n",
			want: "agentrt.yaml:4:4: YAML syntax error: this line is indented 3 spaces, which lines up with no key above it (keys above are indented 0, 2) (did not find expected key)",
		},
		{
			name: "key indented under a value",
			src:  "models:\n  m:\n    provider: openai\n      model: gpt\n",
			want: "agentrt.yaml:4:7: YAML syntax error: this line is indented deeper than line 3, whose key already has a value (mapping values are not allowed in this context)",
		},
		{
			name: "lists and block text are followed",
			src:  "agents:\n  a:\n    tools:\n    - calculator\n    - clock\n    instructions: |\n      be nice\n        really\n   limits: {max_rounds: 2}\n",
			want: "agentrt.yaml:9:4: YAML syntax error: this line is indented 3 spaces, which lines up with no key above it (keys above are indented 0, 2) (did not find expected key)",
		},
		{
			name: "unquoted value ending in a colon",
			src:  "store: memory:\n",
			want: "agentrt.yaml: YAML syntax error: mapping values are not allowed in this context; " +
				"quote a value that holds \": \" or ends in \":\", e.g. store: \"memory:\"",
		},
		{
			name: "bad variable reference",
			src:  "models:\n  m: {provider: openai, model: x, api_key: \"${OPENAI KEY}\"}\n",
			want: `agentrt.yaml:2:44: models.m.api_key: bad variable reference "${OPENAI KEY}": want ${NAME} or ${NAME:-default}`,
		},
		{
			name: "unterminated variable reference",
			src:  "models:\n  m: {provider: openai, model: x, api_key: \"${OPENAI_KEY\"}\n",
			want: `agentrt.yaml:2:44: models.m.api_key: unterminated "${OPENAI_KEY": close it with } or write $$ for a literal $`,
		},
		{
			name: "non-string key",
			src:  "models:\n  ? [a, b]\n  : {provider: demo}\n",
			want: "agentrt.yaml:2:5: models: a key must be a string, got a list",
		},
		{
			name: "merge of a scalar",
			src:  "x-a: &a hello\nmodels:\n  m: {<<: *a, provider: demo}\n",
			want: `agentrt.yaml:3:7: models.m: << merges a mapping or a list of mappings, got "hello"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseErr(t, tt.src, tt.env)
			if got != tt.want {
				t.Errorf("error:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestProblemsReportedTogether(t *testing.T) {
	t.Parallel()
	src := `store: redis://h
models:
  main: {provider: openia, model: gpt-4o-mini}
agents:
  assistant:
    model: mian
    strategy: reactive
    limits: {max_rounds: ten, max_steps: -1}
    timeouts: {idle: 1.5}
  helper: {model: main, tols: [clock]}
`
	_, err := Parse("agentrt.yaml", []byte(src), envOf(nil))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse error = %v, want *Error", err)
	}
	want := []Problem{
		{"agentrt.yaml", 1, 8, "store", `unknown store "redis:": want sqlite:PATH, postgres://…, postgresql://… or memory:`},
		{"agentrt.yaml", 3, 20, "models.main.provider", `unknown provider "openia"; did you mean openai? (known: openai, anthropic, scripted, demo, auto)`},
		{"agentrt.yaml", 6, 12, "agents.assistant.model", `unknown model "mian"; did you mean main? (models: main)`},
		{"agentrt.yaml", 7, 15, "agents.assistant.strategy", `unknown strategy "reactive" (known: react, plan_execute)`},
		{"agentrt.yaml", 8, 26, "agents.assistant.limits.max_rounds", `expected an integer, got "ten"`},
		{"agentrt.yaml", 8, 42, "agents.assistant.limits.max_steps", "must not be negative, got -1"},
		{"agentrt.yaml", 9, 22, "agents.assistant.timeouts.idle", `bad duration "1.5": want a Go duration such as "8s" or "2m", or whole seconds`},
		{"agentrt.yaml", 10, 25, "agents.helper.tols", "unknown key; did you mean tools?"},
	}
	if diff := cmp.Diff(want, e.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("Error() has %d lines, want %d:\n%s", len(lines), len(want), err)
	}
	if got, want := lines[4], `agentrt.yaml:8:26: agents.assistant.limits.max_rounds: expected an integer, got "ten"`; got != want {
		t.Errorf("line 5 of Error():\n got: %s\nwant: %s", got, want)
	}
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "f.yaml", Line: 3, Column: 5, Path: "a.b", Message: "bad"}, "f.yaml:3:5: a.b: bad"},
		{Problem{File: "f.yaml", Line: 3, Message: "bad"}, "f.yaml:3: bad"},
		{Problem{File: "f.yaml", Path: "a", Message: "bad"}, "f.yaml: a: bad"},
		{Problem{Path: "a", Message: "bad"}, "a: bad"},
		{Problem{Message: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	keys := []string{"max_rounds", "max_steps", "max_tokens", "max_cost_usd"}
	tests := []struct{ in, want string }{
		{"max_round", "; did you mean max_rounds?"},
		{"maxRounds", "; did you mean max_rounds?"},
		{"max-steps", "; did you mean max_steps?"},
		{"max_tokesn", "; did you mean max_tokens?"},
		{"budget", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, keys); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckStore(t *testing.T) {
	t.Parallel()
	for dsn, ok := range map[string]bool{
		"sqlite:.agentrt/agentrt.db":         true,
		"sqlite:/var/lib/agentrt.db":         true,
		"memory:":                            true,
		"postgres://u:p@localhost:5432/db":   true,
		"postgresql://u:p@localhost:5432/db": true,
		"memory":                             false,
		"sqlite:":                            false,
		"postgres:db":                        false,
		"mysql://u:p@h/db":                   false,
		"":                                   false,
	} {
		err := CheckStore(dsn)
		if (err == nil) != ok {
			t.Errorf("CheckStore(%q) = %v, want ok=%v", dsn, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), ":p@") {
			t.Errorf("CheckStore(%q) error repeats the password: %v", dsn, err)
		}
	}
}

// FuzzLocate: the locators never panic, and what they report is inside
// the source.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{"a: {b: [1, 2\n", "a:\n  b: 1\n   c: 2\n", "- a: 1\n  b: [x]\n- 'q''s': \"x\\\"\"\n", "k: |\n  x\n y: 1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		for _, locate := range []func(string) (int, int, string, bool){locateUnclosed, locateIndent, locateQuote} {
			line, col, msg, ok := locate(src)
			if !ok {
				continue
			}
			if line < 1 || line > lines || col < 1 || msg == "" {
				t.Errorf("locate(%q) = %d:%d %q", src, line, col, msg)
			}
		}
	})
}
