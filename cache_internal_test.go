package agentrt

import (
	"fmt"
	"testing"
)

// The state cache keeps the most recent max sessions, hands each State out
// once, and reuses its nodes: taking a State out and putting it back
// allocates nothing.
func TestStateCache(t *testing.T) {
	c := newStateCache(3)
	st := map[string]*State{}
	for _, id := range []string{"a", "b", "c", "d"} {
		st[id] = &State{SessionID: id}
		c.put(skey{id: id}, st[id])
	}
	if c.take(skey{id: "a"}) != nil {
		t.Error("a, the least recent of 4 in a cache of 3, is still there")
	}
	c.put(skey{id: "b"}, st["b"]) // b is now the most recent
	c.put(skey{id: "e"}, &State{SessionID: "e"})
	if c.take(skey{id: "c"}) != nil {
		t.Error("c should have gone before b")
	}
	for _, id := range []string{"b", "d"} {
		if got := c.take(skey{id: id}); got != st[id] {
			t.Errorf("take(%s) = %v", id, got)
		}
		if c.take(skey{id: id}) != nil {
			t.Errorf("take(%s) twice", id)
		}
	}
	if c.n != 1 || len(c.m) != 1 {
		t.Errorf("%d nodes, %d keys, want 1 (e)", c.n, len(c.m))
	}
	k, s := skey{id: "x"}, &State{}
	if n := testing.AllocsPerRun(100, func() {
		c.put(k, s)
		c.take(k)
	}); n != 0 {
		t.Errorf("put and take: %v allocations, want 0", n)
	}
	for i := range 10 {
		c.put(skey{id: fmt.Sprint(i)}, &State{})
	}
	if c.n != 3 || len(c.m) != 3 {
		t.Errorf("%d nodes, %d keys, want 3", c.n, len(c.m))
	}
}
