package gateway_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/gateway"
)

type failingModule struct{}

func (failingModule) Name() string { return "screen" }
func (failingModule) Order() int   { return 10 }
func (failingModule) Run(context.Context, *gateway.Turn) error {
	return errors.New("screening is down")
}

// Refused tells a follower when this process sets an input aside: the
// channel closes once the input is refused in the inbox, and a follower
// that asks a moment after gets it closed already. An input that is
// answered is not refused.
func TestRefusedTellsTheFollower(t *testing.T) {
	e := newEnv(t, gateway.Config{Modules: []gateway.Module{failingModule{}}})
	stop := e.run(t)
	defer stop()
	ctx := t.Context()
	sub := e.submit(t, "chat", "hello")
	ch, done := e.g.Refused(sub.ID)
	defer done()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no refusal")
	}
	ins, err := e.store.Inputs(ctx, "chat", 0, 10)
	if err != nil || len(ins) != 1 || ins[0].State != "refused" {
		t.Fatalf("inbox: %+v, %v; want the input refused", ins, err)
	}
	late, done2 := e.g.Refused(sub.ID)
	defer done2()
	select {
	case <-late:
	default:
		t.Fatal("asked after the refusal: the channel is not closed")
	}
	other, done3 := e.g.Refused("in_unknown")
	defer done3()
	select {
	case <-other:
		t.Fatal("an input never refused: the channel is closed")
	default:
	}
}
