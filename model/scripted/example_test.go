package scripted_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

func ExampleNew() {
	m := scripted.New("calc",
		scripted.Reply{ToolCalls: []scripted.Call{
			scripted.ToolCall("calculator", `{"expression":"2+2"}`),
		}},
		scripted.Reply{Text: "2+2 = 4", Chunks: 3},
	)
	ctx := context.Background()
	req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 2+2?")}}

	resp, _ := model.Generate(ctx, m, req)
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.ID, call.Name, string(call.Arguments))

	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("%q\n", c.Text)
	}

	_, err := model.Generate(ctx, m, req)
	fmt.Println(err)
	// Output:
	// tool_calls call_1_1 calculator {"expression":"2+2"}
	// "2+"
	// "2 "
	// "= 4"
	// scripted model "calc": script has 2 replies, call 3 is beyond it; last message: user: "what is 2+2?"
}

func ExampleParse() {
	m, err := scripted.Parse("weather", []byte(`
replies:
  - tool_calls:
      - name: weather
        arguments: {city: Paris}
    expect:
      tools_include: [weather]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = model.Generate(context.Background(), m, &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "weather in Paris?")},
	})
	fmt.Println(err)
	// Output:
	// scripted model "weather": reply 1 of 1: expected the request to offer tool "weather"; it offers no tools
}

// A model that plays by conversation answers a request with the reply
// that follows it, whoever asked before: here a new model, as in a new
// process, continues a conversation that had its first reply elsewhere.
func ExampleModel_ByConversation() {
	replies := []scripted.Reply{
		{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2+2"}`)}},
		{Text: "2+2 = 4", Expect: &scripted.Expect{LastToolResultContains: `"result":4`}},
	}
	req := &model.Request{Messages: []model.Message{
		model.TextMessage(model.RoleUser, "what is 2+2?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1_1", Name: "calculator", Arguments: []byte(`{"expression":"2+2"}`)}}},
		{Role: model.RoleTool, ToolCallID: "call_1_1", Name: "calculator", Parts: []model.Part{{Type: model.PartText, Text: `{"result":4}`}}},
	}}
	ctx := context.Background()

	resp, _ := model.Generate(ctx, scripted.New("calc", replies...).ByConversation(), req)
	fmt.Println(resp.Message.Text())

	resp, _ = model.Generate(ctx, scripted.New("calc", replies...), req) // in order: the first reply again
	fmt.Println(resp.Message.ToolCalls[0].Name)
	// Output:
	// 2+2 = 4
	// calculator
}
