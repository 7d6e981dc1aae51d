package agentrt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

func TestProfileRender(t *testing.T) {
	for _, tc := range []struct {
		p    agentrt.Profile
		want string
	}{
		{agentrt.Profile{}, ""},
		{agentrt.Profile{Name: "Ada"}, "You are Ada."},
		{agentrt.Profile{Role: "an analyst"}, "You are an analyst."},
		{agentrt.Profile{Name: "Ada", Role: "an analyst", Goal: "be right", Backstory: "ex-physicist", Language: "zh", Tone: "concise"},
			"You are Ada, an analyst.\nYour goal: be right\nBackground: ex-physicist\nAnswer in Chinese.\nTone: concise."},
		{agentrt.Profile{Language: "pt-BR"}, "Answer in pt-BR."},
	} {
		if got := tc.p.Render(); got != tc.want {
			t.Errorf("Render(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
	if got := agentrt.RenderSystemPrompt(agentrt.Profile{Name: "Ada"}, "  Use tools.  "); got != "You are Ada.\n\nUse tools." {
		t.Errorf("SystemPrompt = %q", got)
	}
}

func TestBuild(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: "hi"})
	a, err := agentrt.NewAgent("ada").
		Profile(agentrt.Profile{Name: "Ada"}).
		Instructions("Be brief.").
		Model(m).
		Tools(builtin.Calculator(), builtin.Clock(nil)).
		ToolFilter("calc*").
		MaxRounds(3).
		Approval(agentrt.ApprovalPolicy{Ask: []string{"calculator"}}).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "ada" || a.SystemPrompt != "You are Ada.\n\nBe brief." || a.Limits.MaxRounds != 3 {
		t.Errorf("agent = %+v", a)
	}
	if names := a.Tools.Names(); len(names) != 1 || names[0] != "calculator" {
		t.Errorf("tools = %v", names)
	}
	if got := a.Approval.For("calculator", nil); got != tool.ApprovalAsk {
		t.Errorf("approval = %s", got)
	}
}

func TestBuildReportsEveryProblem(t *testing.T) {
	_, err := agentrt.NewAgent("").
		Tools(builtin.Calculator(), builtin.Calculator()).
		MaxRounds(-1).
		Executor(agentrt.KindFinish, nil).
		Build()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"no name", "no model", "negative", "nil executor", "calculator"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_, err = agentrt.NewAgent("x").Model(scripted.New("m")).Tools(builtin.Calculator()).ToolFilter("nothing*").Build()
	if err == nil || !strings.Contains(err.Error(), "nothing*") {
		t.Errorf("filter matching nothing: %v", err)
	}
}

func TestBuiltAgentRuns(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: "hello", Expect: &scripted.Expect{LastUserContains: "hi"}}).Record()
	a, err := agentrt.NewAgent("ada").Profile(agentrt.Profile{Name: "Ada"}).Model(m).Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: newStore(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.CreateSession(context.Background(), "ada", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(r.Run(context.Background(), s.ID, agentrt.Input{Text: "hi"}))
	if err != nil || res.Text != "hello" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if sys := m.Requests()[0].System; sys != "You are Ada." {
		t.Errorf("system prompt = %q", sys)
	}
}
