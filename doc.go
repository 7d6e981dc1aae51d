// Package agentrt runs LLM agents over durable sessions. It is the one
// import most programs need: the Runner, the Agent and its Builder, the
// Policy that decides each step, the executors that carry steps out, and
// the hooks around model and tool calls.
//
// A session advances by steps. In each step the agent's Policy looks at
// the State and decides the next Instruction; the Executor for it does the
// work and emits events; the store appends the events in one transaction
// before anyone sees them. A run killed at any point resumes where it
// stopped.
//
//	add := tool.Must(tool.New("add", "adds two numbers",
//		func(ctx context.Context, in struct{ A, B float64 }) (float64, error) { return in.A + in.B, nil }))
//	a, err := agentrt.NewAgent("assistant").Model(m).Tools(add).Build()
//	store, err := sqlite.Open(ctx, ".agentrt/agentrt.db")
//	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
//	s, err := r.CreateSession(ctx, "assistant", "", nil)
//	for ev, err := range r.Run(ctx, s.ID, agentrt.Input{Text: "what is 2+3?"}) {
//		// run_started, round_started, model_started, token..., model_finished,
//		// tool_call, tool_result, ..., final, run_finished
//	}
//
// The models live in package model and its providers, tools in package
// tool, sessions and their stores in package session.
package agentrt
