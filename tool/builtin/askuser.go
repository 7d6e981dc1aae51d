package builtin

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/tool"
)

// AskUserInput is what the model sends ask_user: a question, and for a
// choice its options (several may be chosen if multi).
type AskUserInput struct {
	Question string   `json:"question" jsonschema:"the question to ask the user, in full"`
	Options  []string `json:"options,omitempty" jsonschema:"the answers to choose from, if the user should choose"`
	Multi    bool     `json:"multi,omitempty" jsonschema:"whether several options may be chosen"`
}

// AskUser is the ask_user tool: the model asks the person it works for a
// question, or a choice among options. The runtime does not run it: the
// call becomes a human request (tool.Meta.AsksUser), and the person's
// answer becomes the call's result. Called directly, it fails.
func AskUser() tool.Tool {
	return tool.Must(tool.New("ask_user", "Asks the user a question and returns their answer. "+
		"Give options to let them choose among answers. Use it when you need information or a decision only the user has.",
		func(context.Context, AskUserInput) (string, error) {
			return "", errors.New("ask_user is answered by a person, through the runtime's human requests")
		}, tool.Meta{AsksUser: true}))
}
