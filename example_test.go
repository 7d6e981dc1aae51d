package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// exampleAdd is a typed tool: its JSON Schema is inferred from the input struct,
// and its arguments are checked against it before the function runs.
var exampleAdd = tool.Must(tool.New("add", "adds two numbers",
	func(ctx context.Context, in struct{ A, B float64 }) (float64, error) { return in.A + in.B, nil }))

// scriptedAdder is a model that asks for add(2, 3), then answers from the
// result. Any model.Model goes here: openai, anthropic, the offline demo.
func scriptedAdder() model.Model {
	return scripted.New("scripted",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("add", map[string]any{"A": 2, "B": 3})}},
		scripted.Reply{Text: "2+3 = 5", Expect: &scripted.Expect{LastToolResultContains: "5"}},
	)
}

// newRunner returns a runner of the agent assistant, with add, over an
// in-memory store (sqlite.Open or postgres.Open keep sessions across
// processes).
func newRunner(approval agentrt.ApprovalPolicy) *agentrt.Runner {
	a, err := agentrt.NewAgent("assistant").
		Profile(agentrt.Profile{Name: "Ada", Role: "a careful assistant"}).
		Model(scriptedAdder()).
		Tools(exampleAdd).
		Approval(approval).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	var n atomic.Int64
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a},
		// Ids that print the same every time (the default is random).
		NewID: func() string { return fmt.Sprint(n.Add(1)) }})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// Ask runs one turn in a throwaway session and returns its answer.
func ExampleRunner_Ask() {
	r := newRunner(agentrt.ApprovalPolicy{})
	res, err := r.Ask(context.Background(), "assistant", "what is 2+3?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	// Output: 2+3 = 5
}

// Run yields a turn's events as they are committed (and the model's live
// tokens, which have no seq).
func ExampleRunner_Run() {
	r := newRunner(agentrt.ApprovalPolicy{})
	ctx := context.Background()
	for ev, err := range r.Run(ctx, "chat-1", agentrt.Input{Text: "what is 2+3?", Agent: "assistant"}) {
		if err != nil {
			log.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.ToolCall:
			fmt.Printf("%d %s %s %s\n", ev.Seq, ev.Type, d.Name, d.Arguments)
		case *session.ToolResult:
			fmt.Printf("%d %s %s\n", ev.Seq, ev.Type, d.Result)
		case *session.Final:
			fmt.Printf("%d %s %q\n", ev.Seq, ev.Type, d.Text)
		case *session.RunFinished:
			fmt.Printf("%d %s %s\n", ev.Seq, ev.Type, d.Status)
		case *session.Token, *session.ToolCallDelta:
			// live: text and a call's arguments as the model streams them
		default:
			fmt.Println(ev.Seq, ev.Type)
		}
	}
	// Output:
	// 1 run_started
	// 2 round_started
	// 3 model_started
	// 4 model_finished
	// 5 tool_call add {"A":2,"B":3}
	// 6 tool_result 5
	// 7 round_started
	// 8 model_started
	// 9 model_finished
	// 10 final "2+3 = 5"
	// 11 run_finished done
}

// A call that needs a person's approval stops the run, waiting; Resolve
// records the decision (from any process, any time later) and Resume goes
// on.
func ExampleRunner_Resolve() {
	r := newRunner(agentrt.ApprovalPolicy{Ask: []string{"add"}})
	ctx := context.Background()
	_, err := r.Send(ctx, "s1", agentrt.Input{Text: "what is 2+3?", Agent: "assistant"})
	var waiting *agentrt.RunError
	if !errors.As(err, &waiting) || waiting.Status != session.StatusWaiting {
		log.Fatal(err)
	}
	q := waiting.Requests[0]
	fmt.Println(q.Kind, q.Question)
	if _, err := r.Resolve(ctx, "s1", q.ID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana"}); err != nil {
		log.Fatal(err)
	}
	res, err := agentrt.Collect(r.Resume(ctx, "s1"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Text)
	// Output:
	// approval Allow add with arguments {"A":2,"B":3}?
	// done 2+3 = 5
}

// DefaultAgent is the agent a session belongs to when the caller names
// none.
func ExampleRunner_DefaultAgent() {
	var agents []*agentrt.Agent
	for _, name := range []string{"researcher", "assistant"} {
		a, err := agentrt.NewAgent(name).Model(scriptedAdder()).Build()
		if err != nil {
			log.Fatal(err)
		}
		agents = append(agents, a)
	}
	for _, def := range []string{"", "researcher"} {
		r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: agents, DefaultAgent: def})
		if err != nil {
			log.Fatal(err)
		}
		name, err := r.DefaultAgent()
		fmt.Println(name, err)
	}
	// Output:
	// assistant <nil>
	// researcher <nil>
}

// DescribeOutcome says how a run ended, and what goes on, for the
// agentrt command and for a server alike.
func ExampleDescribeOutcome() {
	r := newRunner(agentrt.ApprovalPolicy{Ask: []string{"add"}})
	ctx := context.Background()
	res, err := agentrt.Collect(r.Run(ctx, "s1", agentrt.Input{Text: "what is 2+3?", Agent: "assistant"}))
	if err != nil {
		log.Fatal(err)
	}
	st, err := r.Load(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	o := agentrt.DescribeOutcome(res, st.Requests)
	fmt.Println(o.ExitCode, o.Summary)
	for _, n := range o.Next {
		fmt.Println(n.Kind, n.Command(agentrt.CLIFlags{Store: "sqlite:my.db"}))
	}
	// Output:
	// 3 session s1 is waiting for a person
	// resolve agentrt --store sqlite:my.db approve s1 req_2
}
