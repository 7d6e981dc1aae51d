// Package config reads agentrt.yaml, the file that names the store, the
// models, the MCP servers, the agents and the HTTP server.
//
// # Loading
//
// Load reads a file; Parse does the same for bytes already in hand; Default
// is the built-in config used when there is no file:
//
//	cfg, err := config.Load("agentrt.yaml")
//	if errors.Is(err, fs.ErrNotExist) {
//		cfg, err = config.Default(), nil
//	}
//	if err != nil {
//		return err // every problem, one per line, as file:line:col: path: message
//	}
//
// A smallest useful file names a model and an agent that uses it:
//
//	models:
//	  main: {provider: openai, model: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}
//	agents:
//	  assistant: {model: main, tools: [calculator, clock]}
//
// A file is the whole config, with a few defaults: a missing store is
// DefaultStore, an agent without limits.max_rounds (or with 0) gets
// DefaultMaxRounds, and with no agents at all the default assistant exists,
// with the calculator and clock tools, using the file's only model or else
// the model "auto" (provider auto: the first model agentrt finds in the
// environment, else the offline demo model). Other zero values (strategy, approval default,
// timeouts, compaction, loop detection) mean the runtime's defaults.
//
// The store is sqlite:PATH, postgres://…, postgresql://… or memory: (write
// "memory:" in quotes, as YAML reads an unquoted trailing colon as a mapping,
// or just memory). Prices are USD per million tokens: price: {input: 0.15, output: 0.6,
// cached: 0.075}. Durations are Go durations ("8s", "2m") or whole seconds
// (120). Keys starting with x- at the top level are ignored, so they can hold
// YAML anchors to merge (<<: *name) elsewhere.
//
// # Environment variables
//
// ${VAR} in a value is replaced by the variable's value; ${VAR:-default}
// uses default when VAR is unset or empty; $$ is a literal $. Any other $ is
// kept, so "pa$word" needs no escaping, and $VAR without braces is not
// expanded. Expansion runs on scalar values after the YAML is parsed, so a
// variable never adds keys or structure, and a number may come from the
// environment (max_rounds: "${ROUNDS:-10}"). Keys are never expanded.
//
// An unset variable without a default expands to "" and is remembered:
// CheckModels and CheckServer then say "api_key is empty because
// ${OPENAI_API_KEY} is not set". Parse does not fail on such values, since a
// model no run uses need not work; call CheckModels for the models a run is
// about to use.
//
// # Problems and positions
//
// Parse is strict: an unknown key (with the closest known key suggested),
// a value of the wrong type, a bad duration, a negative limit, an unknown
// provider or strategy, a reference to a model that does not exist, a
// duplicate key, a bad URL or store DSN are all reported, together, as an
// *Error whose Problems carry file, line, column and key path.
//
// YAML syntax errors point at the mistake for an unclosed { or [, a
// wrongly indented key and a tab that indents a line (YAML indents with
// spaces only), found by scanning the source; others get the line yaml.v3
// gives, which has no column and may be early.
//
// Checks that need to know the runtime live on Config: CheckTools reports
// tool names that match no tool. Config.Pos and Config.Problemf give callers
// the position of any key path, so problems found later (an MCP server that
// does not start) can point into the file too.
package config
