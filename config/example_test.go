package config_test

import (
	"fmt"

	"github.com/agentrt/agentrt/config"
)

func ExampleParse() {
	src := `models:
  main: {provider: openai, model: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}
agents:
  assistant:
    model: main
    tools: [calculator, clock]
    limits: {max_rounds: 5}
`
	env := func(name string) (string, bool) {
		if name == "OPENAI_API_KEY" {
			return "sk-example", true
		}
		return "", false
	}
	cfg, err := config.Parse("agentrt.yaml", []byte(src), env)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := cfg.Agents["assistant"]
	fmt.Println(cfg.Store)
	fmt.Println(a.Model, a.Tools, a.Limits.MaxRounds)
	// Output:
	// sqlite:.agentrt/agentrt.db
	// main [calculator clock] 5
}

func ExampleParse_problems() {
	src := `models:
  main: {provider: openai, model: gpt-4o-mini}
agents:
  assistant:
    model: mian
    limits: {max_round: 5}
`
	_, err := config.Parse("agentrt.yaml", []byte(src), nil)
	fmt.Println(err)
	// Output:
	// agentrt.yaml:5:12: agents.assistant.model: unknown model "mian"; did you mean main? (models: main)
	// agentrt.yaml:6:14: agents.assistant.limits.max_round: unknown key; did you mean max_rounds?
}

func ExampleConfig_CheckModels() {
	src := `models:
  main: {provider: openai, model: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}
`
	unset := func(string) (string, bool) { return "", false }
	cfg, err := config.Parse("agentrt.yaml", []byte(src), unset)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.CheckModels(cfg.Agents["assistant"].Models()...))
	// Output:
	// agentrt.yaml:2:48: models.main.api_key: api_key is empty because ${OPENAI_API_KEY} is not set
}
