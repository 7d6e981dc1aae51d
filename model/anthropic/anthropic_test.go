package anthropic_test

import (
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/modeltest"
)

func newModel(t *testing.T, baseURL string) model.Model {
	m, err := anthropic.New(anthropic.Config{BaseURL: baseURL, Model: "claude-sonnet-4-5", APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Anthropic, newModel)
}
