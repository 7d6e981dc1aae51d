package gateway

import (
	"slices"
	"sync"
)

// refusals tells followers of an input when this process sets it aside
// (a module failed, its content could not be decoded, the turn was
// stopped), so that they need not poll the inbox for it. A refusal in
// another process is found by polling (Inbox.Inputs) only.
type refusals struct {
	mu      sync.Mutex
	watched map[string]chan struct{} // by input id; closed when refused
	recent  []string                 // the last ids refused, oldest first, at most recentRefusals
}

// recentRefusals is how many refused ids are remembered, for a follower
// that asks after the refusal (its input was set aside between Submit
// and its asking).
const recentRefusals = 64

// Refused returns a channel that is closed when this process's gateway
// sets the input of id aside (refused in the inbox, the reason there);
// it is closed already when that happened a moment before. Call done
// when no longer waiting. A refusal by another process's gateway does
// not close it: read the inbox for those.
func (g *Gateway) Refused(id string) (refused <-chan struct{}, done func()) {
	rs := &g.refusals
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.watched == nil {
		rs.watched = map[string]chan struct{}{}
	}
	ch, ok := rs.watched[id]
	if !ok {
		ch = make(chan struct{})
		if slices.Contains(rs.recent, id) {
			close(ch)
		}
		rs.watched[id] = ch
	}
	return ch, func() {
		rs.mu.Lock()
		if rs.watched[id] == ch {
			delete(rs.watched, id)
		}
		rs.mu.Unlock()
	}
}

// refused records that ids were set aside, closing their followers'
// channels.
func (rs *refusals) refused(ids []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, id := range ids {
		if ch, ok := rs.watched[id]; ok {
			close(ch)
			delete(rs.watched, id)
		}
		if len(rs.recent) == recentRefusals {
			rs.recent = slices.Delete(rs.recent, 0, 1)
		}
		rs.recent = append(rs.recent, id)
	}
}
