package agentrt

import (
	"container/list"
	"sync"
)

// DefaultStateCache is how many sessions' states a Runner keeps between
// runs when Config.StateCache is zero.
const DefaultStateCache = 1024

// stateCache keeps the States of the sessions this runner ran last, so
// that the next run of a long conversation does not decode its snapshot
// and replay its log again. A run takes its session's State out (it owns
// it while it runs) and puts it back when it stops with everything
// committed. Before a cached State is used it is checked against the
// store: the lease says nobody else writes while the runner holds it, and
// the session's last seq says whether anybody wrote since (then the
// events after the cached State's seq are replayed into it).
//
// Safe for concurrent use; bounded (least recently used out).
type stateCache struct {
	mu  sync.Mutex
	max int
	ll  *list.List             // of *cached, most recent first; guarded by mu
	m   map[skey]*list.Element // guarded by mu
}

type cached struct {
	k  skey
	st *State
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, ll: list.New(), m: make(map[skey]*list.Element)}
}

// take removes and returns the State of k, or nil.
func (c *stateCache) take(k skey) *State {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil {
		return nil
	}
	c.ll.Remove(e)
	delete(c.m, k)
	return e.Value.(*cached).st
}

// put keeps st as the State of k.
func (c *stateCache) put(k skey, st *State) {
	if c == nil || st == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		c.ll.Remove(e)
	}
	c.m[k] = c.ll.PushFront(&cached{k, st})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*cached).k)
	}
}
