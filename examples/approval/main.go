// Command approval shows a run that stops for a human and survives the
// process that started it.
//
// The agent's deploy tool needs approval. The first "process" runs the
// agent until it asks for approval, prints the request and closes its
// store. The second opens a new store and a new runner on the same SQLite
// file, as another process might days later, records the human's decision
// with Resolve and finishes the run with Resume. Both halves live in one
// program so that it can be run (and tested) in one go; nothing passes
// from the first to the second but the database file and the session id.
//
//	go run ./examples/approval                  # approve
//	go run ./examples/approval -reject          # reject
//	go run ./examples/approval -dir ./state     # keep the database
package main

import (
	"context"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
)

const request = "Deploy checkout v2.4.1 to production."

func main() {
	dir := flag.String("dir", "", "directory for the SQLite database (default: a temporary directory, removed on exit)")
	reject := flag.Bool("reject", false, "reject the deploy instead of approving it")
	flag.Parse()
	if err := run(context.Background(), *dir, *reject); err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string, reject bool) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "agentrt-approval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	db := filepath.Join(dir, "agentrt.db")
	fmt.Println("db:", db)

	id, err := firstProcess(ctx, db)
	if err != nil {
		return err
	}
	fmt.Println("store closed; the session waits on disk")
	return secondProcess(ctx, db, id, reject)
}

type deployIn struct {
	Service string `json:"service" jsonschema:"the service to deploy"`
	Version string `json:"version" jsonschema:"the version to deploy, e.g. v1.2.3"`
}

type deployOut struct {
	Service string `json:"service"`
	Version string `json:"version"`
	Status  string `json:"status"`
}

// deploy pretends to deploy. Passing a tool.Meta to tool.New marks it as
// needing approval wherever it is used; an agent can also ask for approval
// of tools it did not write, with agentrt.ApprovalPolicy{Ask: []string{"deploy"}}.
var deploy = tool.Must(tool.New("deploy", "Deploys a version of a service to production.",
	func(_ context.Context, in deployIn) (deployOut, error) {
		return deployOut{Service: in.Service, Version: in.Version, Status: "deployed"}, nil
	},
	tool.Meta{Approval: tool.ApprovalAsk},
))

// newRunner builds the same agent in both processes: the runner finds a
// session's agent by name, and its tools and policy come from code, not
// from the store.
func newRunner(store session.Store, m model.Model) (*agentrt.Runner, error) {
	a, err := agentrt.NewAgent("release-bot").
		Instructions("Deploy what you are asked to; report the outcome.").
		Model(m).
		Tools(deploy).
		Build()
	if err != nil {
		return nil, err
	}
	return agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
}

// firstProcess starts a session and runs it until it waits for a human.
// It returns the session id, which is all the second process needs.
func firstProcess(ctx context.Context, db string) (string, error) {
	fmt.Println("== process 1: run until a human must decide")
	store, err := sqlite.Open(ctx, db)
	if err != nil {
		return "", err
	}
	defer store.Close()

	// A scripted model stands in for a provider. Each process gets the
	// replies it will play: this one only ever sees the first model call.
	m := scripted.New("scripted",
		scripted.Reply{ToolCalls: []scripted.Call{
			scripted.ToolCall("deploy", `{"service":"checkout","version":"v2.4.1"}`),
		}},
	)
	r, err := newRunner(store, m)
	if err != nil {
		return "", err
	}
	s, err := r.CreateSession(ctx, "release-bot", "", nil)
	if err != nil {
		return "", err
	}
	fmt.Println("session:", s.ID)
	fmt.Println("user:", request)
	status, err := printEvents(r.Run(ctx, s.ID, agentrt.Input{Text: request}))
	if err != nil {
		return "", err
	}
	if status != session.StatusWaiting {
		return "", fmt.Errorf("run ended %s, want waiting", status)
	}
	// The deferred Close releases the database: from then on the session
	// lives only on disk. A Runner holds nothing that needs closing.
	return s.ID, nil
}

// secondProcess opens the same file afresh, answers the pending request
// and resumes the run to its end.
func secondProcess(ctx context.Context, db, id string, reject bool) error {
	fmt.Println("== process 2: a new store and runner on the same file")
	store, err := sqlite.Open(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()

	// The final reply depends on the decision; Expect checks that the
	// model is told what happened to its call.
	final := scripted.Reply{
		Text:   "Deployed checkout v2.4.1 to production.",
		Expect: &scripted.Expect{LastToolResultContains: `"status":"deployed"`},
	}
	if reject {
		final = scripted.Reply{
			Text:   "I did not deploy checkout v2.4.1: the deploy was rejected (change freeze).",
			Expect: &scripted.Expect{LastToolResultContains: "rejected"},
		}
	}
	r, err := newRunner(store, scripted.New("scripted", final))
	if err != nil {
		return err
	}

	// Load rebuilds the session's state from the store: its status and the
	// requests still waiting for a human, with the calls they concern.
	st, err := r.Load(ctx, id)
	if err != nil {
		return err
	}
	fmt.Printf("session %s is %s with %d pending request(s)\n", id, st.Status, len(st.Requests))
	for _, q := range st.Requests {
		for _, c := range st.Calls {
			if slices.Contains(q.Calls, c.Call.ID) {
				fmt.Printf("pending: %s %s %s\n", q.ID, c.Call.Name, c.Call.Arguments)
			}
		}
		res := agentrt.Resolution{Decision: session.DecisionApprove, By: "alice@example.com"}
		if reject {
			res = agentrt.Resolution{Decision: session.DecisionReject, By: "alice@example.com", Reason: "change freeze until Monday"}
		}
		// Resolve only records the decision; the session stays waiting
		// until every request is resolved and someone calls Resume.
		e, err := r.Resolve(ctx, id, q.ID, res)
		if err != nil {
			return err
		}
		printEvent(e)
	}

	status, err := printEvents(r.Resume(ctx, id))
	if err != nil {
		return err
	}
	if status != session.StatusDone {
		return fmt.Errorf("run ended %s, want done", status)
	}
	return nil
}

// printEvents prints a run's stored events and returns the status it
// ended with. Tokens are skipped: the final event repeats their text.
func printEvents(seq iter.Seq2[*session.Event, error]) (session.Status, error) {
	var status session.Status
	for e, err := range seq {
		if err != nil {
			return "", err
		}
		printEvent(e)
		if d, ok := e.Data.(*session.RunFinished); ok {
			status = d.Status
		}
	}
	return status, nil
}

func printEvent(e *session.Event) {
	switch d := e.Data.(type) {
	case *session.InputRequired:
		fmt.Printf("input_required: %s: %s\n", d.RequestID, d.Question)
	case *session.InputResolved:
		fmt.Printf("input_resolved: %s: %s by %s\n", d.RequestID, d.Decision, d.By)
	case *session.RunResumed:
		fmt.Printf("resumed: %s (was %s)\n", d.Reason, d.From)
	case *session.ToolCall:
		fmt.Printf("tool_call: %s %s\n", d.Name, d.Arguments)
	case *session.ToolResult:
		if d.OK {
			fmt.Printf("tool_result: %s ok %s\n", d.Name, d.Result)
		} else {
			fmt.Printf("tool_result: %s failed: %s\n", d.Name, d.Error)
		}
	case *session.Final:
		fmt.Println("final:", d.Text)
	case *session.Error:
		fmt.Printf("error: %s: %s\n", d.Code, d.Message)
	case *session.RunFinished:
		fmt.Println("status:", d.Status)
	}
}
