// Command memory shows an agent's memory: with RememberTurns, each
// finished turn is written to it; in a later session the agent's
// retrieve tool finds it again. The memory here is SQLite FTS5 in the
// same file as the sessions, as agentrt.yaml's memory: {enabled: true,
// remember_turns: true} gives.
//
// The model is scripted, so the program needs no network.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/memory/sqlitemem"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "memory:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "agentrt-memory")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agentrt.db")
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer store.Close()
	mem, err := sqlitemem.Open(ctx, path)
	if err != nil {
		return err
	}
	defer mem.Close()

	m := scripted.New("assistant-model",
		scripted.Reply{Text: "Noted: your team deploys on Tuesdays."},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("retrieve", `{"query":"when does the team deploy"}`)}},
		scripted.Reply{Text: "On Tuesdays, as you told me."})
	a, err := agentrt.NewAgent("assistant").Model(m).Memory(mem, true).Build()
	if err != nil {
		return err
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
	if err != nil {
		return err
	}
	defer r.Close(ctx)

	res, err := r.Send(ctx, "monday", agentrt.Input{Text: "Remember: we deploy on Tuesdays.", Agent: "assistant"})
	if err != nil {
		return err
	}
	fmt.Println("session monday:", res.Text)

	res, err = r.Send(ctx, "friday", agentrt.Input{Text: "When do we deploy?", Agent: "assistant"})
	if err != nil {
		return err
	}
	for _, e := range res.Events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			fmt.Printf("retrieve: %s\n", d.Result)
		}
	}
	fmt.Println("session friday:", res.Text)
	return nil
}
