// Package tool defines what a tool is to agentrt, turns plain Go functions
// into tools with an inferred JSON Schema, and keeps tools in a Registry
// that validates arguments and turns every failure into data the model can
// read.
//
// # Writing a tool
//
// A tool is a Go function from an input struct to an output value. New
// infers the JSON Schema the model sees from the input struct: each field
// is a property named by its json tag, required unless tagged omitempty or
// omitzero, and described by its jsonschema tag.
//
//	type weatherIn struct {
//		City string `json:"city" jsonschema:"city name, e.g. Paris"`
//		Days int    `json:"days,omitempty" jsonschema:"days ahead, 1 to 7; default 1"`
//	}
//
//	func weather(ctx context.Context, in weatherIn) (Forecast, error) { ... }
//
//	var weatherTool = tool.Must(tool.New("weather", "Forecast for a city.", weather))
//
// Pass a Meta to New to set the tool's policy, such as a timeout or the
// need for a human's approval, and WithInputSchema to write the schema by
// hand (to add enums or bounds, say). A tool runs on the caller's
// goroutine and must heed its context, which carries the call's deadline;
// a tool that may block regardless should set Meta.Isolate, so that
// Registry.Call returns at the deadline all the same. Tools that are not Go functions, such
// as those of an MCP server, implement Tool directly; WithMeta gives any
// Tool a Meta.
//
// # Calling tools
//
// A Registry holds the tools of an agent. Its Definitions go into the model
// request, and Call runs what the model asked for:
//
//	reg, err := tool.NewRegistry(weatherTool, builtin.Calculator())
//	...
//	res := reg.Call(ctx, call.Name, call.Arguments)
//
// Call never fails and never panics: an unknown tool, arguments that do
// not fit the schema, the tool's own error, a panic, a timeout, all come
// back as a Result with OK false and an Error worded for the model, which
// reads it and can try again. Result.Err keeps the failure as a Go error
// for the program: errors.As(res.Err, new(*tool.ArgumentError)) tells bad
// arguments from failed tools.
//
// Filter narrows a Registry to the tools one agent may use, by name or
// glob ("fs.*"). A Registry may change while it is used: Replace swaps a
// group of tools in one step (an MCP server's list, which changes at run
// time), and Generation tells readers that something changed, so that
// what they derive from the tools is worked out again only then.
//
// # Delegating
//
// A tool that hands its task to an agent outside the runtime (a remote
// A2A agent) sets Meta.Delegates and reports that agent's work through the
// Delegation in its call's context (DelegationFrom): Start, Progress,
// Text, then Pause, Finish or Fail. The runtime records the reports in the
// calling session's log as it records an in-process sub-agent's, and a
// call that runs again after a crash learns from Previous the child its
// earlier attempt started, to go on with it.
//
// # Validation
//
// Arguments are checked against the schema before the tool runs, so a
// tool's code only ever sees arguments of the right shape. The message of
// an *ArgumentError names the property at fault, which is what a model
// needs to correct its call. Tools that are not typed get the same check
// from the Registry, with a Validator resolved once per tool.
package tool
