package agentrt_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session/memstore"
)

// A runner's cached state is checked against the store: turns taken by
// another runner (another process) in between are not lost.
func TestStateCacheAcrossRunners(t *testing.T) {
	store := memstore.New()
	reply := func(n int) []scripted.Reply {
		var rs []scripted.Reply
		for i := range n {
			rs = append(rs, scripted.Reply{Text: fmt.Sprint("answer ", i)})
		}
		return rs
	}
	// The whole history is compared: compaction off.
	uncompacted := func(ag *agentrt.Agent) *agentrt.Agent { ag.Compaction.Off = true; return ag }
	a := newEnv(t, store, agentrt.Config{}, uncompacted(calcAgent(scripted.New("m", reply(3)...), nil)))
	b := newEnv(t, store, agentrt.Config{}, uncompacted(calcAgent(scripted.New("m", reply(100)...), nil)))
	id := a.session(t, "calc")
	a.run(t, id, "one")
	b.run(t, id, "two")
	a.run(t, id, "three") // a's cache missed b's turn: it replays it
	for i := 0; i < 70; i++ {
		b.run(t, id, "more") // more than a snapshot's worth
	}
	a.run(t, id, "last")
	st, err := a.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range st.Messages {
		if m.Role == model.RoleUser {
			users = append(users, m.Text())
		}
	}
	if len(users) != 74 || users[0] != "one" || users[1] != "two" || users[2] != "three" || users[73] != "last" {
		t.Errorf("user messages %d: %v...", len(users), users[:3])
	}
	fresh := newEnv(t, store, agentrt.Config{StateCache: -1}, calcAgent(scripted.New("m"), nil))
	want, err := fresh.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Messages, st.Messages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("cached and loaded differ:\n%s", diff)
	}
}
