package openai_test

import (
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/modeltest"
)

func newModel(t *testing.T, baseURL string) model.Model {
	m, err := openai.New(openai.Config{BaseURL: baseURL, Model: "gpt-4o", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.OpenAI, newModel)
}
