package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/tool"
	"github.com/google/go-cmp/cmp"
)

func newTool[In, Out any](t testing.TB, name string, fn func(context.Context, In) (Out, error), opts ...tool.Option) tool.Tool {
	t.Helper()
	tl, err := tool.New(name, "The "+name+" tool.", fn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func noop(context.Context, struct{}) (string, error) { return "ok", nil }

func rawEcho(name string) *rawTool {
	return &rawTool{name: name, schema: `{"type":"object"}`, call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		return args, nil
	}}
}

func TestRegistryErrors(t *testing.T) {
	t.Parallel()
	a := newTool(t, "a", noop)
	tests := []struct {
		name  string
		tools []tool.Tool
		want  string
	}{
		{"duplicate", []tool.Tool{a, newTool(t, "b", noop), newTool(t, "a", noop)}, `duplicate tool name "a"`},
		{"duplicate raw", []tool.Tool{rawEcho("x"), rawEcho("x")}, `duplicate tool name "x"`},
		{"nil tool", []tool.Tool{a, nil}, "nil tool"},
		{"invalid name", []tool.Tool{rawEcho("no spaces")}, `invalid tool name "no spaces"`},
		{"bad schema", []tool.Tool{&rawTool{name: "s", schema: `{"type":"array"}`}}, "must describe an object"},
		{"unparsable schema", []tool.Tool{&rawTool{name: "s", schema: `{"type":`}}, `tool "s": input schema`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := tool.NewRegistry(tt.tools...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewRegistry error = %v, want one containing %q", err, tt.want)
			}
			if r != nil {
				t.Error("NewRegistry returned a registry along with its error")
			}
		})
	}
}

func TestRegistryAdd(t *testing.T) {
	t.Parallel()
	var r tool.Registry // the zero Registry is ready to use
	if r.Len() != 0 || len(r.Definitions()) != 0 {
		t.Fatalf("zero registry is not empty")
	}
	if err := r.Add(newTool(t, "b", noop), rawEcho("a")); err != nil {
		t.Fatal(err)
	}
	// A failed Add adds nothing.
	if err := r.Add(newTool(t, "c", noop), rawEcho("a")); err == nil {
		t.Fatal("Add of a duplicate succeeded")
	}
	if err := r.Add(newTool(t, "c", noop)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "a", "c"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	var defNames []string
	for _, d := range r.Definitions() {
		defNames = append(defNames, d.Name)
		if len(d.InputSchema) == 0 {
			t.Errorf("definition %s has no schema", d.Name)
		}
	}
	if diff := cmp.Diff([]string{"b", "a", "c"}, defNames); diff != "" {
		t.Errorf("Definitions order (-want +got):\n%s", diff)
	}
	if got, ok := r.Get("a"); !ok || got.Definition().Name != "a" {
		t.Errorf("Get(a) = %v, %v", got, ok)
	}
	if got, ok := r.Get("zz"); ok || got != nil {
		t.Errorf("Get(zz) = %v, %v", got, ok)
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d", r.Len())
	}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	var tools []tool.Tool
	for _, n := range []string{"fs.read", "fs.write", "web_search", "fs", "calculator", "fsx.read"} {
		tools = append(tools, rawEcho(n))
	}
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	r.SetDefaultTimeout(3 * time.Second)
	tests := []struct {
		patterns []string
		want     []string
		err      string
	}{
		{[]string{"fs.*"}, []string{"fs.read", "fs.write"}, ""},
		{[]string{"calculator", "fs.*"}, []string{"fs.read", "fs.write", "calculator"}, ""}, // registration order
		{[]string{"fs*"}, []string{"fs.read", "fs.write", "fs", "fsx.read"}, ""},
		{[]string{"*.read"}, []string{"fs.read", "fsx.read"}, ""},
		{[]string{"*s*r*"}, []string{"fs.read", "fs.write", "web_search", "fsx.read"}, ""},
		{[]string{"*"}, []string{"fs.read", "fs.write", "web_search", "fs", "calculator", "fsx.read"}, ""},
		{[]string{"fs", "fs"}, []string{"fs"}, ""},
		{nil, nil, ""},
		{[]string{"fs.*", "web.*"}, nil, `tool pattern "web.*" matches no tool`},
		{[]string{"calc"}, nil, `tool pattern "calc" matches no tool (have "fs.read", "fs.write", "web_search", "fs", "calculator", "fsx.read")`},
		{[]string{""}, nil, "empty tool name pattern"},
	}
	for _, tt := range tests {
		f, err := r.Filter(tt.patterns)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Filter(%q) error = %v, want one containing %q", tt.patterns, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Filter(%q): %v", tt.patterns, err)
			continue
		}
		if diff := cmp.Diff(tt.want, f.Names(), cmp.Comparer(func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") })); diff != "" {
			t.Errorf("Filter(%q) (-want +got):\n%s", tt.patterns, diff)
		}
	}

	// The filtered registry works on its own and keeps the default timeout.
	f, err := r.Filter([]string{"fs.read"})
	if err != nil {
		t.Fatal(err)
	}
	if res := f.Call(context.Background(), "fs.read", json.RawMessage(`{"path":"x"}`)); !res.OK {
		t.Errorf("call through a filtered registry: %+v", res)
	}
	if res := f.Call(context.Background(), "fs.write", nil); res.OK || !errors.Is(res.Err, tool.ErrUnknownTool) {
		t.Errorf("call of a tool filtered out: %+v", res)
	}
	synctest.Test(t, func(t *testing.T) {
		block := &rawTool{name: "fs.read", schema: `{}`, call: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		r, err := tool.NewRegistry(block)
		if err != nil {
			t.Fatal(err)
		}
		r.SetDefaultTimeout(3 * time.Second)
		f, err := r.Filter([]string{"*"})
		if err != nil {
			t.Fatal(err)
		}
		if res := f.Call(context.Background(), "fs.read", nil); res.Latency != 3*time.Second {
			t.Errorf("filtered registry timed out after %v, want 3s", res.Latency)
		}
	})
}

// errSentinel is a tool's own error, to check that Call keeps it in Err.
var errSentinel = errors.New("the printer is on fire")

func TestCallFailures(t *testing.T) {
	t.Parallel()
	ran := make(map[string]int)
	var mu sync.Mutex
	note := func(name string) {
		mu.Lock()
		ran[name]++
		mu.Unlock()
	}
	raw := func(name, schema string, fn func() (json.RawMessage, error)) tool.Tool {
		return &rawTool{name: name, schema: schema, call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			note(name)
			return fn()
		}}
	}
	r, err := tool.NewRegistry(
		newTool(t, "greet", func(_ context.Context, in greetIn) (string, error) {
			note("greet")
			if in.Name == "printer" {
				return "", fmt.Errorf("greeting failed: %w", errSentinel)
			}
			return "hi " + in.Name, nil
		}),
		raw("files.list", `{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"]}`,
			func() (json.RawMessage, error) { return json.RawMessage(`["a","b"]`), nil }),
		newTool(t, "boom", func(context.Context, struct{}) (int, error) { note("boom"); panic("kaboom") }),
		newTool(t, "boom.err", func(context.Context, struct{}) (int, error) { note("boom.err"); panic(errSentinel) }),
		newTool(t, "boom.isolated", func(context.Context, struct{}) (int, error) { note("boom.isolated"); panic("kaboom") },
			tool.Meta{Isolate: true}),
		// runtime.Goexit on the caller's goroutine would end the test, so
		// only an isolated tool can show that Call survives it.
		newTool(t, "quits", func(context.Context, struct{}) (int, error) { note("quits"); runtime.Goexit(); return 0, nil },
			tool.Meta{Isolate: true}),
		raw("garbled", `{}`, func() (json.RawMessage, error) { return json.RawMessage(`{"a":`), nil }),
		raw("nothing", `{}`, func() (json.RawMessage, error) { return nil, nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name   string
		ctx    context.Context
		tool   string
		args   string
		output string // when OK
		errMsg string // the Result's Error when not OK
		errIs  error
		errAs  any // pointer to a pointer to an error type
		ran    bool
	}{
		{name: "ok", tool: "greet", args: `{"name":"Ada"}`, output: `"hi Ada"`, ran: true},
		{name: "ok raw", tool: "files.list", args: `{"dir":"/"}`, output: `["a","b"]`, ran: true},
		{name: "null output", tool: "nothing", args: `{}`, output: `null`, ran: true},
		{name: "typo", tool: "greeet", args: `{}`,
			errMsg: `unknown tool "greeet"; did you mean "greet"?`, errIs: tool.ErrUnknownTool},
		{name: "case", tool: "Greet", args: `{}`,
			errMsg: `unknown tool "Greet"; did you mean "greet"?`, errIs: tool.ErrUnknownTool},
		{name: "prefix", tool: "files", args: `{}`,
			errMsg: `unknown tool "files"; did you mean "files.list"?`, errIs: tool.ErrUnknownTool},
		{name: "unknown", tool: "weather", args: `{}`,
			errMsg: `unknown tool "weather"; available tools: "greet", "files.list", "boom", "boom.err", "boom.isolated", "quits", "garbled", "nothing"`, errIs: tool.ErrUnknownTool},
		{name: "not an object", tool: "greet", args: `"Ada"`,
			errMsg: `tool "greet": invalid arguments: arguments must be a JSON object, got "\"Ada\""`, errAs: new(*tool.ArgumentError)},
		{name: "not JSON", tool: "files.list", args: `{dir: "/"}`,
			errMsg: `tool "files.list": invalid arguments: arguments are not valid JSON (invalid character 'd' looking for beginning of object key string, at offset 2): "{dir: \"/\"}"`, errAs: new(*tool.ArgumentError)},
		{name: "schema typed", tool: "greet", args: `{"name":["Ada"]}`,
			errMsg: `tool "greet": invalid argument "name": must be a string, got an array`, errAs: new(*tool.ArgumentError)},
		{name: "schema raw", tool: "files.list", args: `{"directory":"/"}`,
			errMsg: `tool "files.list": invalid arguments: missing required property "dir"`, errAs: new(*tool.ArgumentError)},
		{name: "tool error", tool: "greet", args: `{"name":"printer"}`,
			errMsg: "greeting failed: the printer is on fire", errIs: errSentinel, ran: true},
		{name: "panic", tool: "boom", args: `{}`,
			errMsg: `tool "boom" panicked: kaboom`, errAs: new(*tool.PanicError), ran: true},
		{name: "panic with an error", tool: "boom.err", args: `{}`,
			errMsg: `tool "boom.err" panicked: the printer is on fire`, errIs: errSentinel, ran: true},
		{name: "panic isolated", tool: "boom.isolated", args: `{}`,
			errMsg: `tool "boom.isolated" panicked: kaboom`, errAs: new(*tool.PanicError), ran: true},
		{name: "goexit", tool: "quits", args: `{}`,
			errMsg: `tool "quits" exited without returning`, ran: true},
		{name: "invalid output", tool: "garbled", args: `{}`,
			errMsg: `tool "garbled" returned invalid JSON: "{\"a\":"`, ran: true},
		{name: "canceled before", ctx: canceled, tool: "greet", args: `{"name":"Ada"}`,
			errMsg: `tool "greet": call canceled: context canceled`, errIs: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			mu.Lock()
			before := ran[tt.tool]
			mu.Unlock()

			res := r.Call(ctx, tt.tool, json.RawMessage(tt.args))

			if tt.errMsg == "" {
				if !res.OK || string(res.Output) != tt.output || res.Error != "" || res.Err != nil {
					t.Errorf("Call = %+v, want OK with output %s", res, tt.output)
				}
			} else {
				if res.OK || res.Output != nil {
					t.Errorf("Call = %+v, want a failure", res)
				}
				if res.Error != tt.errMsg {
					t.Errorf("Error =\n %s\nwant\n %s", res.Error, tt.errMsg)
				}
				if res.Err == nil || res.Err.Error() != res.Error {
					t.Errorf("Err = %v, want the error whose text is Error", res.Err)
				}
				if tt.errIs != nil && !errors.Is(res.Err, tt.errIs) {
					t.Errorf("Err = %v, want one that is %v", res.Err, tt.errIs)
				}
				if tt.errAs != nil && !errors.As(res.Err, tt.errAs) {
					t.Errorf("Err = %T, want a %T", res.Err, tt.errAs)
				}
			}
			mu.Lock()
			after := ran[tt.tool]
			mu.Unlock()
			if got := after > before; got != tt.ran {
				t.Errorf("tool ran: %v, want %v", got, tt.ran)
			}
			if res.Latency <= 0 {
				t.Errorf("Latency = %v", res.Latency)
			}
		})
	}

	res := r.Call(context.Background(), "boom", nil)
	var pe *tool.PanicError
	if !errors.As(res.Err, &pe) || pe.Tool != "boom" || pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "panic") {
		t.Errorf("PanicError = %+v", pe)
	}
}

func TestCallUnknownInEmptyRegistry(t *testing.T) {
	t.Parallel()
	var r tool.Registry
	res := r.Call(context.Background(), "x", nil)
	if want := `unknown tool "x": no tools are available`; res.Error != want {
		t.Errorf("Error = %q, want %q", res.Error, want)
	}
}

// blocker is a tool that waits for its context to end, as a well-behaved
// slow tool does, and records the deadline it was given.
func blocker(name string, deadlines chan<- time.Time) *rawTool {
	return &rawTool{name: name, schema: `{}`, call: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		if d, ok := ctx.Deadline(); ok && deadlines != nil {
			deadlines <- d
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		meta        tool.Meta
		setDefault  time.Duration
		wantTimeout time.Duration
	}{
		{"default", tool.Meta{}, 0, tool.DefaultTimeout},
		{"registry default", tool.Meta{}, 5 * time.Second, 5 * time.Second},
		{"reset default", tool.Meta{}, -1, tool.DefaultTimeout},
		{"meta", tool.Meta{Timeout: 2 * time.Second}, 5 * time.Second, 2 * time.Second},
		{"meta longer than default", tool.Meta{Timeout: 90 * time.Second}, 5 * time.Second, 90 * time.Second},
	}
	for _, tt := range tests {
		for _, isolate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/isolate=%v", tt.name, isolate), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					deadlines := make(chan time.Time, 1)
					meta := tt.meta
					meta.Isolate = isolate
					r, err := tool.NewRegistry(tool.WithMeta(blocker("slow", deadlines), meta))
					if err != nil {
						t.Fatal(err)
					}
					if tt.setDefault != 0 {
						r.SetDefaultTimeout(5 * time.Second)
						if tt.setDefault < 0 {
							r.SetDefaultTimeout(0)
						}
					}
					start := time.Now()
					res := r.Call(context.Background(), "slow", nil)
					if res.OK || !errors.Is(res.Err, tool.ErrTimeout) {
						t.Fatalf("Call = %+v, want a timeout", res)
					}
					if want := fmt.Sprintf("tool %q timed out after %v", "slow", tt.wantTimeout); res.Error != want {
						t.Errorf("Error = %q, want %q", res.Error, want)
					}
					if errors.Is(res.Err, context.DeadlineExceeded) || errors.Is(res.Err, context.Canceled) {
						t.Errorf("Err = %v: a timeout must not look like the caller's context ending", res.Err)
					}
					if res.Latency != tt.wantTimeout {
						t.Errorf("Latency = %v, want %v", res.Latency, tt.wantTimeout)
					}
					if d := <-deadlines; !d.Equal(start.Add(tt.wantTimeout)) {
						t.Errorf("the tool's deadline = %v, want start + %v", d.Sub(start), tt.wantTimeout)
					}
				})
			})
		}
	}
}

// stubborn returns a tool that ignores its context: it returns "late" when
// release is closed, and closes exited then.
func stubborn(t *testing.T, meta tool.Meta, release <-chan struct{}, exited chan<- struct{}) tool.Tool {
	return newTool(t, "stubborn", func(context.Context, struct{}) (string, error) {
		defer close(exited)
		<-release
		return "late", nil
	}, meta)
}

// TestCallTimeoutToolIgnoresContext checks that Call returns at the
// deadline even if an isolated tool does not: its goroutine is left to
// finish. A tool that is not isolated holds Call until it returns, and the
// call still counts as timed out.
func TestCallTimeoutToolIgnoresContext(t *testing.T) {
	t.Parallel()
	t.Run("isolated", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			release, exited := make(chan struct{}), make(chan struct{})
			r, err := tool.NewRegistry(stubborn(t, tool.Meta{Timeout: time.Second, Isolate: true}, release, exited))
			if err != nil {
				t.Fatal(err)
			}
			res := r.Call(context.Background(), "stubborn", nil)
			if !errors.Is(res.Err, tool.ErrTimeout) || res.Latency != time.Second {
				t.Errorf("Call = %+v, want a timeout after 1s", res)
			}
			select {
			case <-exited:
				t.Fatal("the tool finished before it was released")
			default:
			}
			close(release)
			<-exited // the abandoned goroutine finishes; synctest.Test would fail on a leak
		})
	})
	t.Run("inline", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			release, exited := make(chan struct{}), make(chan struct{})
			r, err := tool.NewRegistry(stubborn(t, tool.Meta{Timeout: time.Second}, release, exited))
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(3*time.Second, func() { close(release) })
			res := r.Call(context.Background(), "stubborn", nil)
			if !errors.Is(res.Err, tool.ErrTimeout) || res.Latency != 3*time.Second || res.Output != nil {
				t.Errorf("Call = %+v, want a timeout after 3s, when the tool returned", res)
			}
		})
	})
}

func TestCallCanceledDuringCall(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, r *tool.Registry, name string, cancelAt, wantLatency time.Duration) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(cancelAt, cancel)
		res := r.Call(ctx, name, nil)
		if !errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, tool.ErrTimeout) {
			t.Errorf("%s: Err = %v, want context.Canceled", name, res.Err)
		}
		if want := fmt.Sprintf("tool %q: call canceled: context canceled", name); res.Error != want {
			t.Errorf("%s: Error = %q, want %q", name, res.Error, want)
		}
		if res.Latency != wantLatency {
			t.Errorf("%s: Latency = %v, want %v", name, res.Latency, wantLatency)
		}
	}
	for _, isolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("polite/isolate=%v", isolate), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r, err := tool.NewRegistry(tool.WithMeta(blocker("polite", nil), tool.Meta{Isolate: isolate}))
				if err != nil {
					t.Fatal(err)
				}
				check(t, r, "polite", 3*time.Second, 3*time.Second)

				// The caller's own deadline, shorter than the tool's
				// timeout, is not the tool timing out.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				res := r.Call(ctx, "polite", nil)
				if !errors.Is(res.Err, context.DeadlineExceeded) || errors.Is(res.Err, tool.ErrTimeout) {
					t.Errorf("Err = %v, want context.DeadlineExceeded", res.Err)
				}
				if res.Latency != 2*time.Second {
					t.Errorf("Latency = %v, want 2s", res.Latency)
				}

				// A cause is kept along with the context's error.
				cctx, ccancel := context.WithCancelCause(context.Background())
				time.AfterFunc(time.Second, func() { ccancel(errSentinel) })
				res = r.Call(cctx, "polite", nil)
				if !errors.Is(res.Err, context.Canceled) || !errors.Is(res.Err, errSentinel) {
					t.Errorf("Err = %v, want context.Canceled and the cause", res.Err)
				}
			})
		})
	}
	t.Run("stubborn/isolate=true", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			release, exited := make(chan struct{}), make(chan struct{})
			defer func() { close(release); <-exited }()
			r, err := tool.NewRegistry(stubborn(t, tool.Meta{Isolate: true}, release, exited))
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, "stubborn", 3*time.Second, 3*time.Second)
		})
	})
	t.Run("stubborn/isolate=false", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			release, exited := make(chan struct{}), make(chan struct{})
			r, err := tool.NewRegistry(stubborn(t, tool.Meta{}, release, exited))
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(5*time.Second, func() { close(release) })
			// Canceled at 3s, it ignores its context and returns at 5s:
			// its result is in hand, and kept.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(3*time.Second, cancel)
			res := r.Call(ctx, "stubborn", nil)
			if !res.OK || string(res.Output) != `"late"` || res.Latency != 5*time.Second {
				t.Errorf("Call = %+v, want the late result after 5s", res)
			}
		})
	})
}

// TestCallConcurrent runs calls from many goroutines while tools are being
// added; run it with -race.
func TestCallConcurrent(t *testing.T) {
	t.Parallel()
	r, err := tool.NewRegistry(newTool(t, "greet", func(_ context.Context, in greetIn) (string, error) { return in.Name, nil }))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("n%d-%d", g, i)
				res := r.Call(context.Background(), "greet", json.RawMessage(`{"name":"`+name+`"}`))
				if !res.OK || string(res.Output) != `"`+name+`"` {
					t.Errorf("Call = %+v", res)
					return
				}
				_ = r.Definitions()
			}
		})
	}
	wg.Go(func() {
		for i := range 20 {
			if err := r.Add(rawEcho(fmt.Sprintf("echo%d", i))); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if r.Len() != 21 {
		t.Errorf("Len = %d, want 21", r.Len())
	}
}

func TestRegistryValidate(t *testing.T) {
	t.Parallel()
	r, err := tool.NewRegistry(
		newTool(t, "greet", func(_ context.Context, in greetIn) (string, error) { return in.Name, nil }),
		&rawTool{name: "raw", schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool, args string
		ok         bool
	}{
		{"greet", `{"name":"a"}`, true},
		{"greet", `{"name":1}`, false},
		{"raw", `{"n":1}`, true},
		{"raw", `{"n":"1"}`, false},
		{"raw", ``, true},
	} {
		err := r.Validate(tt.tool, json.RawMessage(tt.args))
		if (err == nil) != tt.ok {
			t.Errorf("Validate(%s, %s) = %v, want ok %v", tt.tool, tt.args, err, tt.ok)
		}
	}
	if err := r.Validate("nope", nil); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("Validate(nope) = %v, want ErrUnknownTool", err)
	}
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	r, err := tool.NewRegistry(newTool(t, "greet", func(_ context.Context, in greetIn) (string, error) { return in.Name, nil }))
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"name":"a"}`: `{"ok":true,"result":"a"}`,
		`{}`:           `{"ok":false,"error":"tool \"greet\": invalid arguments: missing required property \"name\""}`,
	} {
		b, err := json.Marshal(r.Call(context.Background(), "greet", json.RawMessage(args)))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("Result JSON = %s, want %s", b, want)
		}
	}
}

// CallAs hands the call's identity to the tool through its context, on
// the caller's goroutine and on its own, and Call hands it on from ctx.
func TestCallAsInfo(t *testing.T) {
	t.Parallel()
	var got []tool.CallInfo
	var mu sync.Mutex
	record := func(ctx context.Context, _ struct{}) (string, error) {
		info, ok := tool.CallInfoFrom(ctx)
		if !ok {
			return "", errors.New("no call info")
		}
		mu.Lock()
		got = append(got, info)
		mu.Unlock()
		return "ok", nil
	}
	r, err := tool.NewRegistry(newTool(t, "inline", record), newTool(t, "isolated", record, tool.Meta{Isolate: true}))
	if err != nil {
		t.Fatal(err)
	}
	info := tool.CallInfo{SessionID: "s1", CallID: "c1", Attempt: 2}
	for _, name := range []string{"inline", "isolated"} {
		if res := r.CallAs(context.Background(), info, name, nil); !res.OK {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	if res := r.Call(tool.WithCallInfo(context.Background(), info), "inline", nil); !res.OK {
		t.Fatalf("Call with info in ctx: %+v", res)
	}
	if res := r.Call(context.Background(), "inline", nil); res.OK {
		t.Errorf("Call without info: %+v", res)
	}
	want := tool.CallInfo{SessionID: "s1", CallID: "c1", IdempotencyKey: "s1/c1", Attempt: 2}
	if diff := cmp.Diff([]tool.CallInfo{want, want, want}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// SetTimeout bounds one tool's calls in one registry, over the tool's own
// Meta.Timeout; other registries sharing the tool keep theirs.
func TestSetTimeout(t *testing.T) {
	t.Parallel()
	block := tool.WithMeta(tool.Must(tool.New("block", "waits for its context", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})), tool.Meta{Timeout: time.Hour})
	r, err := tool.NewRegistry(block, rawEcho("echo"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.Filter([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTimeout("block", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if res := r.Call(context.Background(), "block", json.RawMessage(`{}`)); !errors.Is(res.Err, tool.ErrTimeout) {
		t.Fatalf("call: %+v, want a timeout", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := other.Call(ctx, "block", json.RawMessage(`{}`)); errors.Is(res.Err, tool.ErrTimeout) {
		t.Errorf("the filtered registry took the timeout: %+v", res)
	}
	if got := r.Names(); len(got) != 2 || got[0] != "block" {
		t.Errorf("names after SetTimeout: %v", got)
	}
	for _, bad := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"nope", time.Second, `unknown tool "nope"`},
		{"echo", 0, `timeout of tool "echo": 0s is not positive`},
	} {
		if err := r.SetTimeout(bad.name, bad.d); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SetTimeout(%q, %s): %v, want %q", bad.name, bad.d, err, bad.want)
		}
	}
}
