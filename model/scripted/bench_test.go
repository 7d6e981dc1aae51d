package scripted_test

import (
	"context"
	"iter"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

// BenchmarkStream measures one model call as the runtime makes it: through
// the model.Model interface, ranging over every chunk. The script is
// rewound with Reset between calls, which costs a lock.
func BenchmarkStream(b *testing.B) {
	calc := scripted.ToolCall("calculator", `{"expression":"21*2+5"}`)
	cases := []struct {
		name  string
		reply scripted.Reply
	}{
		{"text", scripted.Reply{Text: "21*2+5 = 47"}},
		{"tool_call", scripted.Reply{ToolCalls: []scripted.Call{calc}}},
		{"text_usage_given", scripted.Reply{Text: "21*2+5 = 47", Usage: &model.Usage{InputTokens: 10, OutputTokens: 4}}},
		{"chunks=8", scripted.Reply{Text: "21*2+5 = 47, as the calculator says.", ToolCalls: []scripted.Call{calc}, Chunks: 8}},
	}
	req := &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 21*2+5?")},
		Tools:    []model.ToolSpec{{Name: "calculator"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := scripted.New("bench", c.reply)
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				s.Reset()
				if err := drain(ctx, s, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// drain ranges over a call's stream. It is not inlined, so the model is
// called through the interface as the runtime calls it, and the compiler
// cannot see through to the concrete type.
//
//go:noinline
func drain(ctx context.Context, m model.Model, req *model.Request) error {
	for _, err := range m.Stream(ctx, req) {
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkGenerate adds model.Generate's assembly of the Response.
func BenchmarkGenerate(b *testing.B) {
	s := scripted.New("bench", scripted.Reply{Text: "21*2+5 = 47"})
	req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 21*2+5?")}}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		if _, err := model.Generate(ctx, s, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamRecording is the cost of Record: a deep copy per call.
func BenchmarkStreamRecording(b *testing.B) {
	s := scripted.New("bench", scripted.Reply{Text: "21*2+5 = 47"}).Record()
	req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 21*2+5?")}}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		if err := drain(ctx, s, req); err != nil {
			b.Fatal(err)
		}
	}
}

// fixed is the cheapest possible model: a precomputed sequence of one
// chunk. BenchmarkStreamBaseline measures the caller's own cost of ranging
// over a stream through the interface, to subtract from the others.
type fixed struct {
	seq func(func(model.Chunk, error) bool)
}

func (fixed) Name() string { return "fixed" }

func (f fixed) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] { return f.seq }

func BenchmarkStreamBaseline(b *testing.B) {
	chunk := model.Chunk{Text: "21*2+5 = 47", Usage: &model.Usage{}, FinishReason: model.FinishStop}
	m := fixed{seq: func(yield func(model.Chunk, error) bool) { yield(chunk, nil) }}
	req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 21*2+5?")}}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := drain(ctx, m, req); err != nil {
			b.Fatal(err)
		}
	}
}
