// Command typed-tool shows the shortest path from a Go function to an agent
// that calls it: tool.New infers the tool's JSON Schema from an input
// struct, agentrt.NewAgent assembles the agent, and an agentrt.Runner runs it over
// an in-memory store.
//
// The model is scripted (model/scripted), so the program needs no network
// and no API key, and prints the same conversation every time. Swap in a
// real provider and nothing else changes.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// weatherIn is what the model must send. The json tags name the schema's
// properties; a field without omitempty is required; the jsonschema tag is
// the description the model reads, so it is worth writing for the model.
type weatherIn struct {
	City string `json:"city" jsonschema:"the city to look up, e.g. Paris"`
	Unit string `json:"unit,omitempty" jsonschema:"celsius (the default) or fahrenheit"`
}

// weatherOut is encoded with encoding/json and handed to the model as the
// tool's result.
type weatherOut struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
	Unit        string  `json:"unit"`
	Sky         string  `json:"sky"`
}

// forecasts is a fixed table, so the example is deterministic.
var forecasts = map[string]weatherOut{
	"paris":  {City: "Paris", Temperature: 18, Unit: "celsius", Sky: "sunny"},
	"oslo":   {City: "Oslo", Temperature: 4, Unit: "celsius", Sky: "snow showers"},
	"lisbon": {City: "Lisbon", Temperature: 22, Unit: "celsius", Sky: "clear"},
}

// weather is an ordinary Go function. It only ever sees arguments that
// passed the schema check, so it need not check that City is present.
// Its error is not a failure of the run: the model reads it as a failed
// tool result and can try again.
func weather(_ context.Context, in weatherIn) (weatherOut, error) {
	w, ok := forecasts[strings.ToLower(in.City)]
	if !ok {
		return weatherOut{}, fmt.Errorf("no forecast for %q; try Paris, Oslo or Lisbon", in.City)
	}
	if in.Unit == "fahrenheit" {
		w.Temperature, w.Unit = w.Temperature*9/5+32, "fahrenheit"
	}
	return w, nil
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "typed-tool:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	weatherTool, err := tool.New("weather", "Current weather for a city.", weather)
	if err != nil {
		return err
	}
	fmt.Printf("schema: %s\n", weatherTool.Definition().InputSchema)

	// The script plays the model's side: first a tool call, then an answer
	// that uses the tool's result. Each Expect checks what the runtime sent
	// the model, so a broken wiring fails loudly instead of printing a
	// plausible answer.
	m := scripted.New("scripted-weather",
		scripted.Reply{
			ToolCalls: []scripted.Call{scripted.ToolCall("weather", `{"city":"Paris"}`)},
			Expect:    &scripted.Expect{LastUserContains: "Paris", ToolsInclude: []string{"weather"}},
		},
		scripted.Reply{
			Text:   "It is 18°C and sunny in Paris: no umbrella needed.",
			Chunks: 5, // stream the answer in pieces, as a real provider would
			Expect: &scripted.Expect{LastToolResultContains: `"sky":"sunny"`},
		},
	)

	a, err := agentrt.NewAgent("forecaster").
		Profile(agentrt.Profile{Name: "Sunny", Role: "a weather assistant"}).
		Instructions("Use the weather tool; never guess the weather.").
		Model(m).
		Tools(weatherTool).
		Build()
	if err != nil {
		return err
	}

	// memstore keeps sessions in memory; see the approval example for a
	// durable SQLite store.
	store := memstore.New()
	defer store.Close()
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
	if err != nil {
		return err
	}
	s, err := r.CreateSession(ctx, a.Name, "", nil)
	if err != nil {
		return err
	}

	const question = "Do I need an umbrella in Paris today?"
	fmt.Println("user:", question)
	var final string
	var status session.Status
	// Run yields each event once it is stored, and tokens as they stream.
	// A non-nil error means the run could not start or could not be stored;
	// a failure of the run itself arrives as an error event.
	for e, err := range r.Run(ctx, s.ID, agentrt.Input{Text: question}) {
		if err != nil {
			return err
		}
		switch d := e.Data.(type) {
		case *session.Token:
			fmt.Printf("token: %q\n", d.Text)
		case *session.ToolCall:
			fmt.Printf("tool_call: %s %s\n", d.Name, d.Arguments)
		case *session.ToolResult:
			if d.OK {
				fmt.Printf("tool_result: %s ok %s\n", d.Name, d.Result)
			} else {
				fmt.Printf("tool_result: %s failed: %s\n", d.Name, d.Error)
			}
		case *session.Error:
			fmt.Printf("error: %s: %s\n", d.Code, d.Message)
		case *session.Final:
			final = d.Text
		case *session.RunFinished:
			status = d.Status
		}
	}
	fmt.Println("final:", final)
	if status != session.StatusDone {
		return fmt.Errorf("run ended %s, want done", status)
	}
	// Every reply of the script was used: the conversation went as planned.
	if n := m.Remaining(); n != 0 {
		return fmt.Errorf("%d scripted replies left unplayed", n)
	}
	return nil
}
