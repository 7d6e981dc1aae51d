package agentrt

import "sync"

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
// Safe for concurrent use; bounded (least recently used out). Its nodes
// are reused: a run takes its State out and puts it back, which allocates
// nothing once the cache has held as many sessions as run at once.
type stateCache struct {
	mu   sync.Mutex
	max  int
	n    int              // nodes in the list; guarded by mu
	head cached           // sentinel: head.next is the most recent; guarded by mu
	m    map[skey]*cached // guarded by mu
	free *cached          // nodes out of the list, linked by next; guarded by mu
}

type cached struct {
	k          skey
	st         *State
	prev, next *cached
}

func newStateCache(max int) *stateCache {
	c := &stateCache{max: max, m: make(map[skey]*cached)}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

// unlink takes e out of the list and into the free nodes. The caller
// holds mu.
func (c *stateCache) unlink(e *cached) {
	e.prev.next, e.next.prev = e.next, e.prev
	delete(c.m, e.k)
	c.n--
	*e = cached{next: c.free}
	c.free = e
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
	st := e.st
	c.unlink(e)
	return st
}

// has reports whether the cache holds a State of k.
func (c *stateCache) has(k skey) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k] != nil
}

// put keeps st as the State of k.
func (c *stateCache) put(k skey, st *State) {
	if c == nil || st == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		c.unlink(e)
	}
	e := c.free
	if e != nil {
		c.free = e.next
	} else {
		e = new(cached)
	}
	*e = cached{k: k, st: st, prev: &c.head, next: c.head.next}
	c.head.next.prev = e
	c.head.next = e
	c.m[k] = e
	c.n++
	for c.n > c.max {
		c.unlink(c.head.prev)
	}
}
