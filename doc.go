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
// # An agent and a runner
//
// A typed tool, an agent built with NewAgent, and a Runner over a store:
//
//	add := tool.Must(tool.New("add", "adds two numbers",
//		func(ctx context.Context, in struct{ A, B float64 }) (float64, error) { return in.A + in.B, nil }))
//	a, err := agentrt.NewAgent("assistant").
//		Profile(agentrt.Profile{Name: "Ada", Role: "a careful assistant"}).
//		Model(m). // any model.Model: openai, anthropic, scripted, demo
//		Tools(add).
//		Build()
//	store, err := sqlite.Open(ctx, ".agentrt/agentrt.db")
//	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
//
// # A turn
//
// Runner.Ask runs one turn in a throwaway session and returns the answer;
// Runner.Send runs a turn of a session (created on first use when
// Input.Agent names its agent); Runner.Run yields the turn's events as they
// are committed:
//
//	res, err := r.Ask(ctx, "assistant", "what is 2+3?")
//	for ev, err := range r.Run(ctx, "chat-1", agentrt.Input{Text: "and 4+5?", Agent: "assistant"}) {
//		// run_started, round_started, model_started, token..., model_finished,
//		// tool_call, tool_result, ..., final, run_finished
//	}
//
// Runner.DefaultAgent is the agent a session belongs to when the caller
// names none.
//
// # A person in the loop
//
// A call the agent's ApprovalPolicy asks about, or a question the model
// asks with the ask_user tool, stops the run with status waiting. The
// pending requests are in the *RunError of Send (or State.Requests);
// Runner.Resolve records a person's answer, from any process, any time
// later, and Runner.Resume goes on:
//
//	_, err := r.Send(ctx, "s1", agentrt.Input{Text: "deploy", Agent: "assistant"})
//	var re *agentrt.RunError
//	if errors.As(err, &re) && re.Status == session.StatusWaiting {
//		q := re.Requests[0]
//		_, err = r.Resolve(ctx, "s1", q.ID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana"})
//		res, err = agentrt.Collect(r.Resume(ctx, "s1"))
//	}
//
// DescribeOutcome says how a run ended and what goes on (answer a request,
// resume, send the next turn), with the exit codes of the agentrt command.
//
// The models live in package model and its providers, tools in package
// tool, sessions and their stores in package session.
package agentrt
