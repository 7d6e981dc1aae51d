package zzrt

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

type addIn struct{ A, B float64 }
type addOut struct{ Sum float64 }

func add(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }

type rec struct {
	session.Store
	calls []string
}

func (s *rec) Commit(ctx context.Context, c *session.Commit) error {
	sz := 0
	for _, e := range c.Events {
		b, _ := json.Marshal(e)
		sz += len(b)
	}
	sn := 0
	if c.Snapshot != nil {
		sn = len(c.Snapshot.Data)
	}
	s.calls = append(s.calls, fmt.Sprintf("Commit %d events %dB snap %dB", len(c.Events), sz, sn))
	return s.Store.Commit(ctx, c)
}
func (s *rec) GetSession(ctx context.Context, id string) (*session.Session, error) {
	s.calls = append(s.calls, "GetSession")
	return s.Store.GetSession(ctx, id)
}
func (s *rec) LoadSnapshot(ctx context.Context, id string) (*session.Snapshot, error) {
	s.calls = append(s.calls, "LoadSnapshot")
	return s.Store.LoadSnapshot(ctx, id)
}

func TestCount(t *testing.T) {
	call := func(a, b int) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("add", fmt.Sprintf(`{"a":%d,"b":%d}`, a, b))}}
	}
	m := scripted.New("bench", call(1, 2), call(3, 4), call(5, 6), scripted.Reply{Text: "The sums are 3, 7 and 11."})
	reg, _ := tool.NewRegistry(tool.Must(tool.New("add", "adds two numbers", add)))
	a := &runtime.Agent{Name: "bench", SystemPrompt: "You add numbers.", Model: m, Tools: reg}
	rs := &rec{Store: memstore.New()}
	r, err := runtime.New(runtime.Config{Store: rs, Agents: []*runtime.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := r.CreateSession(context.Background(), "bench", "x", nil)
	rs.calls = nil
	runtime.Collect(r.Run(context.Background(), s.ID, runtime.Input{Text: "add 1+2, 3+4 and 5+6"}))
	for _, c := range rs.calls {
		t.Log(c)
	}
}
