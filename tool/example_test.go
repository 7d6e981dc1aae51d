package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/tool"
)

type shoutIn struct {
	Text  string `json:"text" jsonschema:"what to shout"`
	Times int    `json:"times,omitempty" jsonschema:"how many times; default 1"`
}

func shout(_ context.Context, in shoutIn) (string, error) {
	return strings.TrimSpace(strings.Repeat(strings.ToUpper(in.Text)+"! ", max(in.Times, 1))), nil
}

func ExampleNew() {
	shoutTool, err := tool.New("shout", "Shouts the text.", shout)
	if err != nil {
		panic(err)
	}

	// What the model sees: the schema is inferred from shoutIn.
	fmt.Println(string(shoutTool.Definition().InputSchema))

	out, err := shoutTool.Call(context.Background(), json.RawMessage(`{"text": "hello", "times": 2}`))
	fmt.Println(string(out), err)

	// Arguments that do not fit the schema never reach shout.
	_, err = shoutTool.Call(context.Background(), json.RawMessage(`{"txt": "hello"}`))
	fmt.Println(err)
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"what to shout"},"times":{"type":"integer","description":"how many times; default 1"}},"required":["text"],"additionalProperties":false}
	// "HELLO! HELLO!" <nil>
	// tool "shout": invalid arguments: unknown property "txt" (allowed: "text", "times")
}

func ExampleRegistry_Call() {
	reg, err := tool.NewRegistry(tool.Must(tool.New("shout", "Shouts the text.", shout)))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	res := reg.Call(ctx, "shout", json.RawMessage(`{"text": "hi"}`))
	fmt.Println(res.OK, string(res.Output))

	// Every failure is a Result the model can read.
	res = reg.Call(ctx, "shuot", json.RawMessage(`{"text": "hi"}`))
	fmt.Println(res.OK, res.Error)

	res = reg.Call(ctx, "shout", json.RawMessage(`{"text": 42}`))
	var argErr *tool.ArgumentError
	fmt.Println(res.OK, res.Error, errors.As(res.Err, &argErr))
	// Output:
	// true "HI!"
	// false unknown tool "shuot"; did you mean "shout"?
	// false tool "shout": invalid argument "text": must be a string, got number 42 true
}
