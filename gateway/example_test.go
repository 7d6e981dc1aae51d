package gateway_test

import (
	"context"
	"fmt"
	"iter"
	"log"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// supportModel refunds the order the conversation names last, then says so.
type supportModel struct{}

func (supportModel) Name() string { return "support" }

func (supportModel) Stream(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			yield(model.Chunk{Text: "Done: " + strings.Trim(last.Text(), `"`) + ".", FinishReason: model.FinishStop}, nil)
			return
		}
		text := last.Text()
		order := text[strings.LastIndex(text, "order ")+len("order "):]
		yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{ID: "c1", Name: "refund", Arguments: `{"order":"` + order + `"}`}},
			FinishReason: model.FinishToolCalls}, nil)
	}
}

// A support bot on a chat channel: three messages in a row make one turn,
// and the agent answers once, to all of them.
func Example() {
	refund := tool.Must(tool.New("refund", "refunds an order", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded order " + in.Order, nil
	}))
	tools, err := tool.NewRegistry(refund)
	if err != nil {
		log.Fatal(err)
	}
	store := memstore.New()
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{{Name: "assistant", Model: supportModel{}, Tools: tools}}})
	if err != nil {
		log.Fatal(err)
	}
	g, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	// The channel's conversation (the gateway creates it on its first turn
	// otherwise): made now, to watch it from the start.
	if _, err := r.CreateSession(ctx, "assistant", "chat-7", nil); err != nil {
		log.Fatal(err)
	}
	for _, text := range []string{"hi", "I need a refund", "order 42"} {
		if _, err := g.Submit(ctx, gateway.Input{Source: "chat-7", Text: text}); err != nil {
			log.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { g.Run(runCtx); close(done) }()
	for ev, err := range r.Watch(ctx, "chat-7", 0) { // a source's session is named after it by default
		if err != nil {
			log.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.RunStarted:
			fmt.Printf("one turn for %d inputs\n", len(d.Inputs))
		case *session.Final:
			fmt.Println(d.Text)
		}
		if ev.Type == session.TypeRunFinished {
			break
		}
	}
	stop()
	<-done
	r.Close(ctx)
	// Output:
	// one turn for 3 inputs
	// Done: refunded order 42.
}
