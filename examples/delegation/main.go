// Command delegation shows one agent using another as a tool, and a guard
// at work: a "desk" agent delegates research to a "researcher" agent,
// which runs in a child session of its own; the researcher's model keeps
// calling the same search, and the loop detector warns it, then it
// answers. The parent's log shows the delegation; the child's usage
// counts in the parent's.
//
// The models are scripted (model/scripted), so the program needs no
// network and prints the same run every time.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

type searchIn struct {
	Query string `json:"query" jsonschema:"what to look for"`
}

func search(_ context.Context, in searchIn) (string, error) {
	return "Go 1.23 added range-over-func iterators (iter.Seq, iter.Seq2).", nil
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "delegation:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	searchTool, err := tool.New("search", "Searches the Go release notes.", search)
	if err != nil {
		return err
	}
	usage := &model.Usage{InputTokens: 100, OutputTokens: 20}
	again := scripted.Reply{Usage: usage, ToolCalls: []scripted.Call{scripted.ToolCall("search", `{"query":"range over func"}`)}}
	// The researcher repeats its search: at the third identical call the
	// loop detector warns it (warning: 3), and it answers.
	researcher, err := agentrt.NewAgent("researcher").
		Instructions("You research questions about Go and answer in one sentence.").
		Model(scripted.New("researcher-model", again, again, again,
			scripted.Reply{Usage: usage, Text: "Since Go 1.23, range accepts iterator functions (iter.Seq)."})).
		Tools(searchTool).
		LoopDetection(agentrt.LoopDetection{Warning: 3, Critical: 6}).
		Build()
	if err != nil {
		return err
	}
	desk, err := agentrt.NewAgent("desk").
		Instructions("You answer users, delegating research to the researcher.").
		Model(scripted.New("desk-model",
			scripted.Reply{Usage: usage, ToolCalls: []scripted.Call{scripted.ToolCall("researcher", `{"task":"Since when can range loop over functions?"}`)}},
			scripted.Reply{Usage: usage, Text: "Since Go 1.23: range accepts iterator functions."})).
		Tools(agentrt.SubAgent("researcher", "")).
		Build()
	if err != nil {
		return err
	}
	store := memstore.New()
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{desk, researcher}})
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	s, err := r.CreateSession(ctx, "desk", "chat", nil)
	if err != nil {
		return err
	}
	res, err := r.Send(ctx, s.ID, agentrt.Input{Text: "Since when can I range over a function in Go?"})
	if err != nil {
		return err
	}
	fmt.Println("== the desk's log")
	var child string
	for _, e := range res.Events {
		switch d := e.Data.(type) {
		case *session.SubagentStarted:
			child = d.ChildSession
			fmt.Printf("subagent_started: %s in %s: %s\n", d.Agent, d.ChildSession, d.Task)
		case *session.SubagentFinished:
			fmt.Printf("subagent_finished: %s (%d tokens in)\n", d.Answer, d.Usage.InputTokens)
		case *session.Final:
			fmt.Printf("final: %s\n", d.Text)
		}
	}
	fmt.Println("== the researcher's log, in its own session")
	for e, err := range store.Events(ctx, child, 0) {
		if err != nil {
			return err
		}
		switch d := e.Data.(type) {
		case *session.RunStarted:
			fmt.Printf("run_started: for %s, call %s\n", d.Parent.SessionID, d.Parent.CallID)
		case *session.LoopWarning:
			fmt.Printf("loop_warning (%s): %s\n", d.Detector, d.Detail)
		case *session.Final:
			fmt.Printf("final: %s\n", d.Text)
		}
	}
	total, err := store.GetSession(ctx, s.ID)
	if err != nil {
		return err
	}
	fmt.Printf("== the desk's usage, the researcher's included: %d tokens in\n", total.Usage.InputTokens)
	return nil
}
