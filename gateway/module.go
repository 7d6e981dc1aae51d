package gateway

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// A Module is one step of a turn's pipeline. A turn runs its modules
// grouped by Order: the groups in ascending order, the modules of one
// group concurrently; a module the turn masks is skipped. The agent's run
// is the built-in module "agent", of Order AgentOrder: a moderation
// module might come at 10, a memory recall and a profile lookup at 20,
// a notifier at 40.
//
// Run sees the turn (its inputs, merged, and what earlier modules added),
// may add to it for later modules (Turn.Set), may stop it (Turn.Stop:
// its inputs are refused with the reason, and later groups do not run),
// and should return early when Turn.Interrupted says newer input came
// (the turn restarts from the first group). An error, a panic or a
// timeout fails the turn: its inputs are set aside, refused with the
// failure, and no other source is affected.
type Module interface {
	Name() string
	Order() int
	Run(ctx context.Context, t *Turn) error
}

// Masker is the optional interface of a module that skips some turns.
type Masker interface {
	Masked(t *Turn) bool
}

// Timeouter is the optional interface of a module with a time limit of
// its own; without it, DefaultModuleTimeout applies (the agent module has
// none: its limits are the agent's). Zero or less is no limit. A module
// still running at its limit, or ShutdownGrace after the gateway stopped,
// is abandoned: its turn fails (or, stopping, leaves its inputs pending),
// and its goroutine is left to end on its own (Gateway.Abandoned).
type Timeouter interface {
	Timeout() time.Duration
}

// AgentOrder is the Order of the built-in agent module.
const AgentOrder = 30

// DefaultModuleTimeout bounds a module that does not say (Timeouter).
const DefaultModuleTimeout = time.Minute

// maskKey is the metadata key whose value, a comma-separated list of
// module names, masks those modules for the turn (an input may say
// "no moderation here").
const maskKey = "agentrt.mask"

// Turn is one turn of a source: its inputs and what its modules add.
// Its methods are safe for concurrent use (the modules of a group run at
// once).
type Turn struct {
	// ID names the turn: every run of it records it (run_started's
	// turn_id), and a restart after newer input keeps it.
	ID      string
	Tenant  string
	Source  string
	Session string
	// Inputs are the turn's inputs, oldest first: those of a turn this
	// one restarts, then those that came since.
	Inputs []session.InboxInput
	// Merged is Inputs merged.
	Merged Merged
	// Restart counts the times the turn restarted after newer input.
	Restart int

	g           *Gateway
	s           *serving
	k           skey
	delivered   int // Inputs[:delivered] reached the agent's session already
	mu          sync.Mutex
	values      map[string]any // guarded by mu
	stopped     string         // the reason a module stopped the turn; guarded by mu
	queued      []string       // newer inputs queued past MaxRestarts; guarded by mu
	interrupted atomic.Bool
	result      *agentResult // the agent module's; guarded by mu
	// yield, when set, runs the agent on the module's goroutine and
	// receives its events (Answer).
	yield func(*session.Event) bool
}

// Set records a value for later modules.
func (t *Turn) Set(key string, v any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.values == nil {
		t.values = make(map[string]any)
	}
	t.values[key] = v
}

// Get returns a value an earlier module set.
func (t *Turn) Get(key string) (any, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.values[key]
	return v, ok
}

// Stop stops the turn after the current group: its inputs are refused
// with reason.
func (t *Turn) Stop(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped == "" {
		t.stopped = reason
	}
}

// Interrupted reports that newer input came for the source: the turn
// restarts from its first group with the inputs merged.
func (t *Turn) Interrupted() bool { return t.interrupted.Load() }

// Queued returns the newer inputs that came while the turn ran, after it
// had restarted as often as it may (Config.MaxRestarts): they did not
// restart it, as the interrupt policy would have; the turn after answers
// them.
func (t *Turn) Queued() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.queued)
}

func (t *Turn) queue(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queued = append(t.queued, id)
}

// masked reports whether the turn skips m: by the module (Masker), or
// by the newest input's metadata.
func (t *Turn) masked(m Module) bool {
	if mk, ok := m.(Masker); ok && mk.Masked(t) {
		return true
	}
	for _, name := range splitList(t.Merged.Metadata[maskKey]) {
		if name == m.Name() {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if w := trim(s[start:i]); w != "" {
				out = append(out, w)
			}
			start = i + 1
		}
	}
	return out
}

func trim(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// groupModules orders modules into groups by Order, adding the agent
// module unless one is named "agent".
func groupModules(mods []Module) ([][]Module, error) {
	all := slices.Clone(mods)
	names := map[string]bool{}
	for _, m := range all {
		if m == nil {
			return nil, errors.New("gateway: a nil module")
		}
		if names[m.Name()] {
			return nil, fmt.Errorf("gateway: two modules named %q", m.Name())
		}
		names[m.Name()] = true
	}
	if !names["agent"] {
		all = append(all, agentModule{})
	}
	slices.SortStableFunc(all, func(a, b Module) int { return a.Order() - b.Order() })
	var groups [][]Module
	for i, m := range all {
		if i == 0 || m.Order() != all[i-1].Order() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], m)
	}
	return groups, nil
}

// runModule runs m, turning a panic or a timeout into an error. The
// agent's module runs on the calling goroutine (Answer hands its events
// to its caller there); any other runs on a goroutine of its own, so that
// a module that ignores its context cannot hold the turn, nor the
// gateway's stop: it is abandoned at its time limit, or once the turn's
// context has ended and Config.ShutdownGrace has passed.
func (g *Gateway) runModule(ctx context.Context, m Module, t *Turn) (err error) {
	if _, agent := m.(agentModule); agent {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("module %s panicked: %v\n%s", m.Name(), v, debug.Stack())
			}
		}()
		if err := m.Run(ctx, t); err != nil {
			return fmt.Errorf("module %s: %w", m.Name(), err)
		}
		return nil
	}
	timeout := DefaultModuleTimeout
	if to, ok := m.(Timeouter); ok {
		timeout = to.Timeout()
	}
	mctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		mctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	// state is the module's goroutine's: running until it returns, or
	// abandoned when runModule stops waiting for it first. Whichever of
	// the two comes second knows the other happened.
	const (
		running int32 = iota
		returned
		abandoned
	)
	var state atomic.Int32
	done := make(chan error, 1)
	// This goroutine is the one the gateway knowingly does not join: a
	// module that ignores its context cannot be stopped from outside.
	// It is counted (Gateway.Abandoned) until it returns.
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("module %s panicked: %v\n%s", m.Name(), v, debug.Stack())
			}
			if !state.CompareAndSwap(running, returned) {
				g.abandoned.Add(-1)
			}
		}()
		done <- m.Run(mctx, t)
	}()
	result := func(err error) error {
		if err != nil {
			return fmt.Errorf("module %s: %w", m.Name(), err)
		}
		return nil
	}
	abandon := func(why error) error {
		if !state.CompareAndSwap(running, abandoned) {
			return result(<-done) // it returned as it was given up on
		}
		g.abandoned.Add(1)
		return why
	}
	select {
	case err := <-done:
		return result(err)
	case <-mctx.Done():
	}
	if ctx.Err() == nil {
		// Its own time limit: it is left to end on its own; its result
		// is dropped.
		return abandon(fmt.Errorf("module %s: timed out after %s", m.Name(), timeout))
	}
	// The turn's context ended (the gateway stops, or Answer's caller
	// left): the module has what remains of its time limit, at most the
	// shutdown grace, to return.
	wait := g.cfg.ShutdownGrace
	if dl, ok := mctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	grace := time.NewTimer(max(wait, 0))
	defer grace.Stop()
	select {
	case err := <-done:
		return result(err)
	case <-grace.C:
		err := abandon(fmt.Errorf("module %s: still running %s after its turn was stopped (it ignores its context): abandoned", m.Name(), wait.Round(time.Millisecond)))
		// Nobody sets the turn aside as the gateway stops (its inputs stay
		// pending): this is where the abandonment is told.
		g.report(t.Source, err)
		return err
	}
}

// runGroups runs the turn's pipeline: each group's modules at once, the
// groups in order, stopping after a group when the turn was stopped,
// interrupted or failed.
func (t *Turn) runGroups(ctx context.Context, groups [][]Module) error {
	for _, group := range groups {
		var err error
		if len(group) == 1 {
			if !t.masked(group[0]) {
				err = t.g.runModule(ctx, group[0], t)
			}
		} else {
			var wg sync.WaitGroup
			errs := make([]error, len(group))
			for i, m := range group {
				if t.masked(m) {
					continue
				}
				wg.Go(func() { errs[i] = t.g.runModule(ctx, m, t) })
			}
			wg.Wait()
			err = errors.Join(errs...)
		}
		if err != nil {
			return err
		}
		t.mu.Lock()
		stopped := t.stopped
		t.mu.Unlock()
		if stopped != "" || t.Interrupted() {
			return nil
		}
	}
	return nil
}
