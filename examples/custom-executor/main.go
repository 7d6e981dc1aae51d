// Command custom-executor shows the two ways to change what the runtime
// does without forking it:
//
//   - Executors carry out the policy's instructions (call_model,
//     call_tools, finish, ...). Replacing one, usually by wrapping the
//     built-in one, changes a whole step: here every tool batch is timed,
//     and every final answer is signed.
//   - Hooks are typed callbacks around single model and tool calls. Here a
//     BeforeTool hook blocks fetches of hosts that are not on an allowlist;
//     the model is told why, and the run goes on.
//
// The model is scripted, so the program runs offline and prints the same
// conversation every time (but for the timings).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

const signature = "-- checked by the ops desk"

// timedCallTools wraps the built-in call_tools executor to log and time
// each batch of tool calls. A wrapper keeps everything the built-in one
// does: events committed before and after each call, concurrency, hooks,
// approval decisions.
func timedCallTools(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
	names := make([]string, len(ins.Calls))
	for i, c := range ins.Calls {
		names[i] = c.Name
	}
	start := time.Now()
	err := agentrt.CallTools(ctx, x, ins)
	took := time.Since(start).Round(time.Microsecond)
	if err != nil {
		// An error here is a runtime failure (the store, cancellation),
		// not a tool's: those are results the model reads.
		fmt.Printf("call_tools: %d call(s) [%s] failed after %v: %v\n", len(ins.Calls), strings.Join(names, " "), took, err)
		return err
	}
	fmt.Printf("call_tools: %d call(s) [%s] in %v\n", len(ins.Calls), strings.Join(names, " "), took)
	return nil
}

// signedFinish changes the final answer before the built-in finish
// executor records it, so the signature is in the stored log too, not
// only in what this program prints.
func signedFinish(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
	ins.Text = strings.TrimSpace(ins.Text) + "\n" + signature
	return agentrt.Finish(ctx, x, ins)
}

// allowedHosts is the policy the hook enforces.
var allowedHosts = []string{"docs.example.com"}

// allowlist is a BeforeTool hook. It sees every call before it runs and
// may block it; a blocked call gets a failed result saying the reason,
// which the model reads like any other tool error.
func allowlist(_ context.Context, _ agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
	if call.Name != "fetch" {
		return agentrt.ToolDecision{}
	}
	var in fetchIn
	if err := json.Unmarshal(call.Arguments, &in); err != nil {
		// Malformed arguments: let the tool's schema check explain them.
		return agentrt.ToolDecision{}
	}
	u, err := url.Parse(in.URL)
	if err != nil || !slices.Contains(allowedHosts, u.Hostname()) {
		return agentrt.ToolDecision{Block: true,
			Reason: fmt.Sprintf("host %q is not on the allowlist (%s)", u.Hostname(), strings.Join(allowedHosts, ", "))}
	}
	return agentrt.ToolDecision{}
}

type fetchIn struct {
	URL string `json:"url" jsonschema:"the absolute URL of the page"`
}

// fetch pretends to fetch a page, so the example needs no network.
func fetch(_ context.Context, in fetchIn) (string, error) {
	return "<html>the page at " + in.URL + "</html>", nil
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "custom-executor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// One model reply asks for two tools at once, so call_tools runs them
	// as one batch. The fetch is last, so its (blocked) result is the last
	// tool message the model sees, which the second reply checks.
	m := scripted.New("scripted",
		scripted.Reply{
			ToolCalls: []scripted.Call{
				scripted.ToolCall("calculator", `{"expression":"21*2+5"}`),
				scripted.ToolCall("fetch", `{"url":"https://intranet.corp.example/payroll"}`),
			},
			Expect: &scripted.Expect{ToolsInclude: []string{"calculator", "fetch"}},
		},
		scripted.Reply{
			Text:   "21*2+5 is 47. I could not read the intranet page: that host is not on the allowlist.",
			Expect: &scripted.Expect{LastToolResultContains: "not on the allowlist"},
		},
	)

	a, err := agentrt.NewAgent("helper").
		Instructions("Use the calculator for arithmetic and fetch to read pages.").
		Model(m).
		Tools(builtin.Calculator(), tool.Must(tool.New("fetch", "Fetches a web page.", fetch))).
		// An agent's own executors win over the runner's, which win over
		// the built-in ones.
		Executor(agentrt.KindFinish, signedFinish).
		Hooks(func(h *agentrt.Hooks) {
			h.BeforeTool(0, allowlist)
		}).
		Build()
	if err != nil {
		return err
	}

	store := memstore.New()
	defer store.Close()
	r, err := agentrt.NewRunner(agentrt.Config{
		Store:  store,
		Agents: []*agentrt.Agent{a},
		// Executors in the runner's Config apply to every agent: the place
		// for cross-cutting concerns such as timing.
		Executors: map[agentrt.Kind]agentrt.Executor{agentrt.KindCallTools: timedCallTools},
	})
	if err != nil {
		return err
	}
	s, err := r.CreateSession(ctx, a.Name, "", nil)
	if err != nil {
		return err
	}

	const question = "What is 21*2+5? And what does https://intranet.corp.example/payroll say?"
	fmt.Println("user:", question)
	// Collect drains the run into a Result: the stored events, the final
	// text and the status the run ended with. So the executor's timing
	// line, printed during the run, comes before the events printed below.
	res, err := agentrt.Collect(r.Run(ctx, s.ID, agentrt.Input{Text: question}))
	if err != nil {
		return err
	}
	for _, e := range res.Events {
		switch d := e.Data.(type) {
		case *session.ToolCall:
			fmt.Printf("tool_call: %s %s\n", d.Name, d.Arguments)
		case *session.ToolResult:
			if d.OK {
				fmt.Printf("tool_result: %s ok %s\n", d.Name, d.Result)
			} else {
				fmt.Printf("tool_result: %s failed: %s\n", d.Name, d.Error)
			}
		}
	}
	if res.Err != nil {
		return fmt.Errorf("run failed: %s: %s", res.Err.Code, res.Err.Message)
	}
	fmt.Printf("final: %s\n", res.Text)
	fmt.Println("status:", res.Status)
	if res.Status != session.StatusDone {
		return fmt.Errorf("run ended %s, want done", res.Status)
	}
	return nil
}
