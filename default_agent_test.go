package agentrt_test

import (
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session/memstore"
)

func TestDefaultAgent(t *testing.T) {
	agent := func(name string) *agentrt.Agent {
		a, err := agentrt.NewAgent(name).Model(scripted.New("m")).Build()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tc := range []struct {
		name     string
		agents   []string
		def      string
		want     string
		wantCode string
	}{
		{"assistant wins", []string{"a", "assistant", "b"}, "", "assistant", ""},
		{"the only agent", []string{"solo"}, "", "solo", ""},
		{"configured", []string{"a", "assistant"}, "a", "a", ""},
		{"none to choose", []string{"a", "b"}, "", "", "no_agent"},
		{"no agents", nil, "", "", "no_agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var as []*agentrt.Agent
			for _, n := range tc.agents {
				as = append(as, agent(n))
			}
			r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: as, DefaultAgent: tc.def})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.DefaultAgent()
			if tc.wantCode != "" {
				if code := agentrt.AsError(err).ErrorCode(); code != tc.wantCode {
					t.Fatalf("DefaultAgent() = %q, %v; want code %s", got, err, tc.wantCode)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DefaultAgent() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{agent("a")}, DefaultAgent: "zed"}); err == nil {
		t.Fatal("NewRunner accepted a default agent that is not an agent")
	}
}
