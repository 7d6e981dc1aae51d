package cli_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	rt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// stopTurn is a module that stops every turn before the agent runs, as a
// moderation module refusing an input would.
type stopTurn struct{}

func (stopTurn) Name() string { return "moderation" }
func (stopTurn) Order() int   { return 10 }
func (stopTurn) Run(_ context.Context, t *gateway.Turn) error {
	t.Stop("off-topic")
	return nil
}

// failTurn is a module that fails every turn before the agent runs.
type failTurn struct{}

func (failTurn) Name() string { return "lookup" }
func (failTurn) Order() int   { return 20 }
func (failTurn) Run(context.Context, *gateway.Turn) error {
	return errors.New("profile service unreachable")
}

// The gateway's codes (docs/errors.md, Gateway) end the agentrt commands
// that meet them with the catalog's exit code: send's refusals, and a
// turn of agentrt run that a module stopped or failed (its input set
// aside, refused with the code).
func TestGatewayExitCodesAreTheCatalogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"max_input_bytes: 20\n", nil)
	e.sent("--source", "chat", "--key", "k1", "hello")
	for _, tc := range []struct {
		code string
		args []string
		want string
	}{
		{rt.CodeUnknownSource, []string{"send", "--source", " ", "hi"}, "an input needs a source"},
		{rt.CodeEmptyInput, []string{"send", "--source", "chat", " "}, "the input from source chat is empty"},
		{rt.CodeInputTooLarge, []string{"send", "--source", "chat", strings.Repeat("x", 21)}, "the input from source chat holds 21 bytes; at most 20 are taken"},
		{rt.CodeKeyConflict, []string{"send", "--source", "chat", "--key", "k1", "bye"}, `key "k1" of source chat was given to another input before; send new content with a new key`},
	} {
		// One sentence for a person, not the store's chain of causes.
		r := e.run(tc.args...)
		if want := "agentrt: " + tc.want + "\n"; r.err != want {
			t.Errorf("agentrt %q: %v, want it to say %q", tc.args, r, want)
			continue
		}
		wantCatalogExit(t, r, tc.code)
	}

	for _, tc := range []struct {
		code   string
		module gateway.Module
		say    string
	}{
		{rt.CodeTurnStopped, stopTurn{}, "agentrt: off-topic\n"},
		{rt.CodeModuleFailed, failTurn{}, "agentrt: module lookup: profile service unreachable\n"},
	} {
		e := newEnv(t, demoConfig, nil)
		e.opts.GatewayModules = []gateway.Module{tc.module}
		r := e.run("run", "--session", "s1", "what is 2+3")
		if r.err != tc.say || r.out != "" {
			t.Errorf("run through a %s module: %v, want it to say %q", tc.module.Name(), r, tc.say)
		}
		wantCatalogExit(t, r, tc.code)
		ins := e.inputs("cli")
		if len(ins) != 1 || ins[0].State != session.InputRefused || !strings.HasPrefix(ins[0].Reason, tc.code+": ") {
			t.Errorf("the cli source's inbox: %+v, want the input refused with %s", ins, tc.code)
		}
	}
}
