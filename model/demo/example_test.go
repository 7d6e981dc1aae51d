package demo_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/demo"
)

func Example() {
	m := demo.New()
	ctx := context.Background()
	req := &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "What is 21*2+5?")},
		Tools:    []model.ToolSpec{{Name: "calculator"}},
	}
	resp, _ := model.Generate(ctx, m, req)
	call := resp.Message.ToolCalls[0]
	fmt.Println(call.ID, call.Name, string(call.Arguments))

	// The runtime runs the tool and adds its result.
	req.Messages = append(req.Messages, resp.Message, model.Message{
		Role: model.RoleTool, ToolCallID: call.ID, Name: call.Name,
		Parts: []model.Part{{Type: model.PartText, Text: `{"expression":"21*2+5","result":47}`}},
	})
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			break
		}
		fmt.Printf("%q ", c.Text)
	}
	// Output:
	// demo_call_1 calculator {"expression":"21*2+5"}
	// "21*2+5 " "= " "47"
}
