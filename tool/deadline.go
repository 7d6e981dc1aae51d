package tool

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a tool runs with on the caller's goroutine: its
// parent's values and cancellation plus the call's deadline. Most tools
// never look at ctx.Done, so the timer and channel that a
// context.WithDeadline would allocate up front (four allocations and a
// runtime timer per call) are made only when Done is first called.
//
// It lives inside the invocation, which is allocated anyway.
type callCtx struct {
	parent   context.Context
	deadline time.Time
	info     CallInfo // what CallInfoFrom finds; zero when the caller gave none

	mu       sync.Mutex
	derived  context.Context // made by Done; nil until then
	cancel   context.CancelCauseFunc
	released bool // the call returned; the context is canceled
}

func (c *callCtx) init(parent context.Context, deadline time.Time, info CallInfo) {
	c.parent, c.deadline, c.info = parent, deadline, info
}

// Deadline implements context.Context: the earlier of the call's deadline
// and the parent's.
func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done implements context.Context.
func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.derived == nil {
		d, cancel := context.WithDeadlineCause(c.parent, c.deadline, errTimeoutCause)
		c.derived = d
		c.cancel = func(cause error) { cancel() }
		if c.released {
			cancel()
		}
	}
	return c.derived.Done()
}

// Err implements context.Context.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.derived != nil:
		return c.derived.Err()
	case c.parent.Err() != nil:
		return c.parent.Err()
	case c.released:
		return context.Canceled
	case !time.Now().Before(c.deadline):
		return context.DeadlineExceeded
	}
	return nil
}

// Value implements context.Context.
func (c *callCtx) Value(key any) any {
	if _, ok := key.(callInfoKey); ok && c.info != (CallInfo{}) {
		return c.info
	}
	return c.parent.Value(key)
}

// release ends the call: a derived context is canceled, and the context
// reads as canceled from now on.
func (c *callCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	if c.cancel != nil {
		c.cancel(nil)
	}
}

// timedOut reports whether the call's own deadline passed (rather than
// the parent being done) by the time it returned.
func (c *callCtx) timedOut(now time.Time) bool {
	if c.parent.Err() != nil {
		return false
	}
	c.mu.Lock()
	d := c.derived
	c.mu.Unlock()
	if d != nil && context.Cause(d) == errTimeoutCause {
		return true
	}
	return !now.Before(c.deadline)
}
