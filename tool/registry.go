package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/internal/editdist"
)

// DefaultTimeout is the timeout of a call whose tool sets no Meta.Timeout,
// unless Registry.SetDefaultTimeout changes it.
const DefaultTimeout = 60 * time.Second

// Registry holds the tools of an agent by name, in registration order. It
// validates arguments and runs calls (see Call). The zero Registry is empty
// and ready to use.
//
// A Registry is safe for concurrent use, including Add and Replace while
// other goroutines Call: readers see the tools as of some moment, never a
// torn state. Each tool's Definition and Meta are read once, when it is
// added, and its input schema is resolved then too.
type Registry struct {
	mu sync.Mutex // serializes writers (Add, Replace, SetTimeout); readers don't lock
	// timeouts are SetTimeout's settings by tool name, kept for a tool
	// that Replace puts under the name later; guarded by mu.
	timeouts       map[string]time.Duration
	tools          atomic.Pointer[toolTable] // replaced whole on every change
	defaultTimeout atomic.Int64              // a time.Duration; zero means DefaultTimeout
	// epoch is a clock reading taken when the registry was made; calls
	// read the time as epoch plus the monotonic time since (see now).
	epoch time.Time
}

// toolTable is an immutable snapshot of a Registry's tools.
type toolTable struct {
	byName map[string]*entry
	order  []*entry
	gen    uint64 // the previous table's plus one (see Generation)
}

// entry is one registered tool, with what the Registry derived from it
// once. It is immutable, so registries made by Filter share entries.
type entry struct {
	tool    Tool
	def     Definition
	meta    Meta
	v       *Validator
	prepare func(args json.RawMessage) (invocation, error)
	trusted bool // output is known to be valid JSON
}

// NewRegistry returns a Registry holding tools, in that order.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{epoch: time.Now()}
	if err := r.Add(tools...); err != nil {
		return nil, err
	}
	return r, nil
}

// Add registers tools after those already held. It fails, and adds none,
// if a name is invalid or taken, or an input schema cannot be resolved.
func (r *Registry) Add(tools ...Tool) error { return r.Replace(nil, tools...) }

// Replace removes the named tools and adds tools, in one step: readers see
// the tools before or after, never a mix. A tool added under a name that
// is removed takes the removed tool's place in the order, so that a list
// that changes little keeps its order; the others go last. Names the
// registry does not hold are ignored. Replace fails, and changes nothing,
// if a name is invalid or taken by a tool that stays, or an input schema
// cannot be resolved. A timeout SetTimeout gave a name applies to the tool
// Replace puts under it.
//
// It is how a tool list that changes while the registry is in use (an MCP
// server's) reaches it; Generation tells readers that it changed.
func (r *Registry) Replace(remove []string, add ...Tool) error {
	entries := make([]*entry, 0, len(add))
	for _, t := range add {
		e, err := newEntry(t)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table()
	gone := make(map[string]bool, len(remove))
	for _, n := range remove {
		if old.byName[n] != nil {
			gone[n] = true
		}
	}
	if len(gone) == 0 && len(entries) == 0 {
		return nil // nothing changes: readers keep what they derived
	}
	next := &toolTable{
		byName: make(map[string]*entry, len(old.order)+len(entries)),
		order:  make([]*entry, 0, len(old.order)+len(entries)),
		gen:    old.gen + 1,
	}
	added := make(map[string]*entry, len(entries))
	for _, e := range entries {
		if _, dup := added[e.def.Name]; dup {
			return fmt.Errorf("duplicate tool name %q", e.def.Name)
		}
		if d, ok := r.timeouts[e.def.Name]; ok {
			e.meta.Timeout = d
		}
		added[e.def.Name] = e
	}
	put := func(e *entry) {
		next.byName[e.def.Name] = e
		next.order = append(next.order, e)
	}
	for _, e := range old.order {
		switch n := e.def.Name; {
		case !gone[n]:
			if _, dup := added[n]; dup {
				return fmt.Errorf("duplicate tool name %q", n)
			}
			put(e)
		case added[n] != nil:
			put(added[n]) // in the place of the one it replaces
			delete(added, n)
		}
	}
	for _, e := range entries {
		if added[e.def.Name] == e {
			put(e)
		}
	}
	r.tools.Store(next)
	return nil
}

// Generation returns a number that changes whenever the registry's tools
// change (Add, Replace, SetTimeout), and only then: a reader that derives
// something from the tools, such as the tool list of a model request, can
// keep it until the number changes instead of reading the tools again.
func (r *Registry) Generation() uint64 { return r.table().gen }

func newEntry(t Tool) (*entry, error) {
	if t == nil {
		return nil, errors.New("nil tool")
	}
	e := &entry{tool: t, def: t.Definition(), meta: MetaOf(t)}
	if err := checkName(e.def.Name); err != nil {
		return nil, err
	}
	if p, ok := t.(preparer); ok {
		e.v, e.prepare, e.trusted = p.validator(), p.prepare, true
		return e, nil
	}
	v, err := NewValidator(e.def)
	if err != nil {
		return nil, err
	}
	e.prepare = func(args json.RawMessage) (invocation, error) {
		if err := v.Validate(args); err != nil {
			return nil, err
		}
		return &rawCall{tool: t, args: args}, nil
	}
	e.v = v
	return e, nil
}

var emptyTable = &toolTable{}

func (r *Registry) table() *toolTable {
	if t := r.tools.Load(); t != nil {
		return t
	}
	return emptyTable
}

// SetDefaultTimeout sets the timeout of calls to tools that set no
// Meta.Timeout. Zero or less restores DefaultTimeout.
func (r *Registry) SetDefaultTimeout(d time.Duration) {
	r.defaultTimeout.Store(int64(max(d, 0)))
}

// SetTimeout sets the timeout of calls to the named tool in this registry,
// over its Meta.Timeout: an operator's setting (agentrt.yaml's
// timeouts.tools). Registries made by Filter before or after keep their
// own. d must be positive.
func (r *Registry) SetTimeout(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("timeout of tool %q: %s is not positive", name, d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table()
	e := old.byName[name]
	if e == nil {
		return r.unknown(name)
	}
	if r.timeouts == nil {
		r.timeouts = make(map[string]time.Duration)
	}
	r.timeouts[name] = d
	ne := *e
	ne.meta.Timeout = d
	t := &toolTable{byName: make(map[string]*entry, len(old.byName)), order: make([]*entry, len(old.order)), gen: old.gen + 1}
	for i, x := range old.order {
		if x == e {
			x = &ne
		}
		t.order[i] = x
		t.byName[x.def.Name] = x
	}
	r.tools.Store(t)
	return nil
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	e := r.table().byName[name]
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

// Len returns the number of tools.
func (r *Registry) Len() int { return len(r.table().order) }

// Definitions returns the definitions of the tools, in registration order,
// for a model request. The InputSchema bytes are shared: do not modify them.
func (r *Registry) Definitions() []Definition {
	order := r.table().order
	defs := make([]Definition, len(order))
	for i, e := range order {
		defs[i] = e.def
	}
	return defs
}

// Names returns the names of the tools, in registration order.
func (r *Registry) Names() []string {
	order := r.table().order
	names := make([]string, len(order))
	for i, e := range order {
		names[i] = e.def.Name
	}
	return names
}

// Filter returns a new Registry holding the tools whose names match one of
// patterns, in registration order, with r's default timeout; later changes
// to either registry do not affect the other. A pattern is a
// name, or a glob in which '*' matches any run of characters: "fs.*",
// "*_search", "*". A pattern that matches no tool is an error naming it,
// since it is most likely a typo in a configuration.
func (r *Registry) Filter(patterns []string) (*Registry, error) {
	order := r.table().order
	keep := make([]bool, len(order))
	for _, p := range patterns {
		if p == "" {
			return nil, errors.New("empty tool name pattern")
		}
		matched := false
		for i, e := range order {
			if glob(p, e.def.Name) {
				keep[i], matched = true, true
			}
		}
		if !matched {
			return nil, fmt.Errorf("tool pattern %q matches no tool (have %s)", p, quoteList(r.Names(), 20))
		}
	}
	t := &toolTable{byName: make(map[string]*entry), gen: 1}
	for i, e := range order {
		if keep[i] {
			t.byName[e.def.Name] = e
			t.order = append(t.order, e)
		}
	}
	f := &Registry{epoch: r.epoch}
	r.mu.Lock()
	f.timeouts = maps.Clone(r.timeouts)
	r.mu.Unlock()
	f.tools.Store(t)
	f.defaultTimeout.Store(r.defaultTimeout.Load())
	return f, nil
}

// Match reports whether name matches pattern as Filter reads it: a name,
// or a glob in which '*' matches any run of characters, including none.
// A caller that keeps a filtered registry up to date (see Replace) uses it
// for the tools that appear later.
func Match(pattern, name string) bool { return glob(pattern, name) }

// glob reports whether name matches pattern, in which '*' matches any run
// of characters, including none.
func glob(pattern, name string) bool {
	// Iterative matching with backtracking to the last star: linear for one
	// star, and never exponential.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Validate checks args against the input schema of the tool called name,
// resolved when the tool was added. The error is an *ArgumentError, or
// wraps ErrUnknownTool.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	e := r.table().byName[name]
	if e == nil {
		return r.unknown(name)
	}
	return e.v.Validate(args)
}

// Call runs the tool called name with args and reports the outcome as a
// Result; every failure is data, never a panic or a returned error:
//
//   - an unknown name, with the close name the model probably meant or the
//     names it can use (Err wraps ErrUnknownTool);
//   - args that are not a JSON object or do not fit the input schema (the
//     tool does not run; Err is an *ArgumentError);
//   - the tool's error, as the tool worded it (Err is that error);
//   - a panic in the tool, recovered (Err is a *PanicError);
//   - a timeout (Err wraps ErrTimeout);
//   - ctx canceled or past its deadline (Err wraps ctx.Err() and the
//     cause, if any).
//
// Empty args count as {}. Call does not apply Meta.Approval: asking a human
// is the runner's business, before Call.
//
// Each call gets a context whose deadline is the tool's Meta.Timeout, else
// the Registry's default timeout (DefaultTimeout unless SetDefaultTimeout
// changed it). A tool that returns after its timeout has failed, whatever
// it returned. A tool that returns after ctx ended keeps its outcome, a
// result or an error of its own, unless the error is a context's (the
// call was canceled): the outcome is in hand, and the caller may store it
// rather than run the call again.
//
// A tool runs on the caller's goroutine, unless its Meta says Isolate.
// Then it runs on a goroutine of its own and Call returns at the deadline,
// or when ctx is done, even if the tool ignores its context: the tool's
// goroutine is left to finish on its own and its result is dropped (a tool
// that never returns leaks its goroutine). Without Isolate, a tool that
// ignores its context holds Call until it returns. Isolation is not the
// default because the hand-off between goroutines costs microseconds per
// call, more than all the rest of Call.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) Result {
	return r.CallAs(ctx, CallInfo{}, name, args)
}

// CallAs is Call for the call info names: the tool finds info in its
// context (CallInfoFrom), with the idempotency key made from the session
// and call ids when info has none. It is how the runtime calls tools;
// unlike context.WithValue, it allocates nothing unless the tool asks.
func (r *Registry) CallAs(ctx context.Context, info CallInfo, name string, args json.RawMessage) Result {
	start := r.now()
	out, end, err := r.call(ctx, start, info, name, args)
	if end.IsZero() {
		end = start.Add(time.Since(start))
	}
	res := Result{OK: err == nil, Output: out, Err: err, Latency: end.Sub(start)}
	if err != nil {
		res.Output = nil
		res.Error = err.Error()
	}
	return res
}

// now reads the clock: the epoch plus the monotonic time elapsed since,
// one clock read where time.Now makes two (wall and monotonic). The
// reading carries a monotonic part, so deadlines and latencies computed
// from it ignore changes to the wall clock.
func (r *Registry) now() time.Time {
	if r.epoch.IsZero() {
		return time.Now()
	}
	return r.epoch.Add(time.Since(r.epoch))
}

// call returns the tool's result and, when it read the clock after the
// tool returned, that reading (else the zero time).
func (r *Registry) call(ctx context.Context, start time.Time, info CallInfo, name string, args json.RawMessage) (json.RawMessage, time.Time, error) {
	e := r.table().byName[name]
	if e == nil {
		return nil, time.Time{}, r.unknown(name)
	}
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, canceled(name, ctx)
	}
	inv, err := e.prepare(normalize(args))
	if err != nil {
		return nil, time.Time{}, err
	}
	timeout := e.meta.Timeout
	if timeout <= 0 {
		if timeout = time.Duration(r.defaultTimeout.Load()); timeout <= 0 {
			timeout = DefaultTimeout
		}
	}
	out, end, err := run(ctx, info, name, inv, start, timeout, e.meta.Isolate)
	if err != nil {
		return nil, end, err
	}
	if out == nil {
		return json.RawMessage("null"), end, nil
	}
	if !e.trusted && !json.Valid(out) {
		return nil, end, fmt.Errorf("tool %q returned invalid JSON: %q", name, preview(out))
	}
	return out, end, nil
}

// errTimeoutCause is the cause of a call context that hit its timeout, to
// tell it from a deadline of the caller's context.
var errTimeoutCause = errors.New("tool timeout")

// invocation is one call of a tool, prepared on the caller's goroutine.
type invocation interface {
	// run runs the tool's own code, on the tool's goroutine if isolated.
	run(ctx context.Context)
	// result returns the outcome, on the caller's goroutine, after run.
	result() (json.RawMessage, error)
	state() *callState
}

// callState is what the Registry keeps about a running invocation. An
// isolated tool's goroutine owns the invocation until it sets finished;
// the caller reads the rest only after it saw finished set, and never if
// it stopped waiting.
type callState struct {
	ctx      callCtx // the context of a call on the caller's goroutine
	finished atomic.Bool
	returned bool  // run returned, rather than panicked or called runtime.Goexit
	panicked error // a *PanicError
}

func (s *callState) state() *callState { return s }

// rawCall is one call of a tool that is not typed: all of it, Call
// included, is the tool's own code.
type rawCall struct {
	callState
	tool Tool
	args json.RawMessage
	out  json.RawMessage
	err  error
}

func (c *rawCall) run(ctx context.Context)          { c.out, c.err = c.tool.Call(ctx, c.args) }
func (c *rawCall) result() (json.RawMessage, error) { return c.out, c.err }

// run runs inv with a context that ends timeout after start, on the caller's
// goroutine or, if isolate, on a goroutine of its own.
func run(ctx context.Context, info CallInfo, name string, inv invocation, start time.Time, timeout time.Duration, isolate bool) (json.RawMessage, time.Time, error) {
	st := inv.state()
	deadline := start.Add(timeout)
	if !isolate {
		// On the caller's goroutine: a lazy context (see callCtx), since
		// the call cannot outlive this function anyway.
		st.ctx.init(ctx, deadline, info)
		runTool(&st.ctx, st.ctx.release, name, inv)
		// start carries a monotonic reading: Since reads one clock, not two.
		end := start.Add(time.Since(start))
		if err := finish(name, st); err != nil {
			return nil, end, err
		}
		out, err, ended := endedResult(inv, ctx)
		if ended || ctx.Err() == nil && st.ctx.timedOut(end) {
			// The tool returned after its context ended, perhaps because
			// it did: say why.
			return nil, end, callError(name, ctx, ctx.Err() == nil, timeout)
		}
		return out, end, err
	}
	if info != (CallInfo{}) {
		ctx = WithCallInfo(ctx, info)
	}
	callCtx, cancel := context.WithDeadlineCause(ctx, deadline, errTimeoutCause)
	defer cancel()
	// Wait for callCtx alone: runTool cancels it when the tool finishes,
	// so that no channel of the invocation's is needed.
	go runTool(callCtx, cancel, name, inv)
	<-callCtx.Done()
	if !st.finished.Load() {
		return nil, time.Time{}, ctxError(name, ctx, callCtx, timeout)
	}
	if err := finish(name, st); err != nil {
		return nil, time.Time{}, err
	}
	out, err, ended := endedResult(inv, ctx)
	if ended || ctx.Err() == nil && context.Cause(callCtx) == errTimeoutCause {
		return nil, time.Time{}, ctxError(name, ctx, callCtx, timeout)
	}
	return out, time.Time{}, err
}

// endedResult returns inv's result, and whether the caller's context
// ended and the result is a failure the ending most likely caused. A tool
// that finished with a result, or failed on its own, while the caller was
// canceling keeps its outcome: it is in hand, and whoever canceled may
// still store it rather than run the call again.
func endedResult(inv invocation, ctx context.Context) (json.RawMessage, error, bool) {
	out, err := inv.result()
	if ctx.Err() == nil {
		return out, err, false
	}
	ended := err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
	return out, err, ended
}

// finish reports a tool that panicked or did not return.
func finish(name string, st *callState) error {
	if st.panicked != nil {
		return st.panicked
	}
	if !st.returned {
		return fmt.Errorf("tool %q exited without returning", name)
	}
	return nil
}

// runTool runs inv and recovers a panic, then calls done.
func runTool(ctx context.Context, done func(), name string, inv invocation) {
	st := inv.state()
	defer func() {
		if v := recover(); v != nil {
			st.panicked = &PanicError{Tool: name, Value: v, Stack: debug.Stack()}
		}
		st.finished.Store(true)
		done()
	}()
	inv.run(ctx)
	st.returned = true
}

func ctxError(name string, parent, callCtx context.Context, timeout time.Duration) error {
	return callError(name, parent, parent.Err() == nil && context.Cause(callCtx) == errTimeoutCause, timeout)
}

func callError(name string, parent context.Context, timedOut bool, timeout time.Duration) error {
	if timedOut {
		return fmt.Errorf("tool %q %w after %v", name, ErrTimeout, timeout)
	}
	return canceled(name, parent)
}

func canceled(name string, ctx context.Context) error {
	if cause := context.Cause(ctx); cause != ctx.Err() {
		return fmt.Errorf("tool %q: call canceled: %w (%w)", name, ctx.Err(), cause)
	}
	return fmt.Errorf("tool %q: call canceled: %w", name, ctx.Err())
}

// unknown returns the error for a call of a tool r does not hold.
func (r *Registry) unknown(name string) error {
	names := r.Names()
	if len(names) == 0 {
		return fmt.Errorf("%w %q: no tools are available", ErrUnknownTool, name)
	}
	if best := closest(name, names); best != "" {
		return fmt.Errorf("%w %q; did you mean %q?", ErrUnknownTool, name, best)
	}
	return fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, quoteList(names, 50))
}

// closest returns the name in names nearest to name, if one is near enough
// to be a likely typo: the same but for case, a prefix of at least three
// characters, or within an edit distance of about a third of its length.
func closest(name string, names []string) string {
	best, bestDist := "", len(name)/3+1
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n
		}
		if d := editdist.Distance(strings.ToLower(name), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best == "" && len(name) >= 3 {
		for _, n := range names {
			if strings.HasPrefix(n, name) || strings.HasPrefix(name, n) {
				return n
			}
		}
	}
	return best
}

// quoteList quotes up to max names and says how many more there are.
func quoteList(names []string, max int) string {
	if len(names) == 0 {
		return "none"
	}
	var sb strings.Builder
	for i, n := range names {
		if i == max {
			sb.WriteString(", and " + strconv.Itoa(len(names)-max) + " more")
			break
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Quote(n))
	}
	return sb.String()
}
