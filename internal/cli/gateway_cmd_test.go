package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	rt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/session"
)

// agentrtIn is agentrt with stdin holding in.
func agentrtIn(t *testing.T, opts app.Options, in string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.MainWith(t.Context(), args, cli.Streams{In: strings.NewReader(in), Out: &out, Err: &errb}, opts)
	return result{code: code, out: out.String(), err: errb.String()}
}

// lines is a writer that hands each line written to it to a channel, and
// keeps them all.
type lines struct {
	mu   sync.Mutex
	all  strings.Builder
	part string
	ch   chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.part += string(p)
	for {
		i := strings.IndexByte(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.ch <- l.part[:i]
		l.part = l.part[i+1:]
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// background is agentrt running in this process until its context is
// canceled.
type background struct {
	t      *testing.T
	stderr *lines
	stop   context.CancelCauseFunc
	done   chan result
}

// start runs agentrt with args (and --config) in the background.
func (e *env) start(args ...string) *background {
	e.t.Helper()
	ctx, cancel := context.WithCancelCause(e.t.Context())
	b := &background{t: e.t, stderr: &lines{ch: make(chan string, 1024)}, stop: cancel, done: make(chan result, 1)}
	go func() {
		var out bytes.Buffer
		code := cli.MainWith(ctx, append([]string{"--config", e.config}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: b.stderr}, e.opts)
		b.done <- result{code: code, out: out.String(), err: b.stderr.String()}
	}()
	e.t.Cleanup(func() { cancel(nil) })
	return b
}

// waitLine waits for a line on stderr holding every one of parts.
func (b *background) waitLine(parts ...string) string {
	b.t.Helper()
	for {
		select {
		case l := <-b.stderr.ch:
			if containsAll(l, parts...) {
				return l
			}
		case r := <-b.done:
			b.t.Fatalf("agentrt ended before saying %q: %v", parts, r)
		}
	}
}

// interrupt stops it as Ctrl-C does and returns what it left.
func (b *background) interrupt() result {
	b.t.Helper()
	b.stop(rt.ErrSignalInterrupt)
	return <-b.done
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// agentrt gateway answers what was sent, a source's pending inputs in one
// turn, says so in a line, and exits 0 on Ctrl-C once its workers have
// stopped.
func TestGatewayCommandAnswersAndStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"gateway: {debounce: 50ms}\n", nil)
	ids := []string{e.sent("--source", "chat", "hi"), e.sent("--source", "chat", "what is 2+3"), e.sent("--source", "chat", "thanks")}
	g := e.start("gateway")
	line := g.waitLine("[gateway]", "source chat", "session chat", "3 input(s)", strings.Join(ids, ", "), ": done")
	r := g.interrupt()
	if r.code != cli.ExitOK || !strings.Contains(r.err, "agentrt gateway: stopped") {
		t.Fatalf("gateway after Ctrl-C: %v", r)
	}
	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "chat", "--json").out)
	starts := ofType(evs, "run_started")
	if len(starts) != 1 {
		t.Fatalf("run_started %v, want one turn", starts)
	}
	var d struct {
		Input  string
		Source string
		Inputs []string
	}
	if err := json.Unmarshal(starts[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Inputs, ids) || d.Source != "chat" || d.Input != "hi\n\nwhat is 2+3\n\nthanks" {
		t.Errorf("run_started %s, want the three inputs merged", starts[0].Data)
	}
	if s := e.sources(); len(s) != 0 {
		t.Errorf("pending after the turn: %+v", s)
	}
	for _, in := range e.inputs("chat") {
		if in.State != session.InputAnswered || in.RunID == "" || !strings.Contains(line, "run "+in.RunID) {
			t.Errorf("input %+v, want answered by the run the line names: %s", in, line)
		}
	}
}

// A turn that fails is a line too; its input is set aside, refused with
// the failure.
func TestGatewayCommandSaysFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "models:\n  d: {provider: demo}\nagents:\n  a1: {model: d}\n  a2: {model: d}\n", nil)
	e.must(cli.ExitOK, "run", "--agent", "a1", "--session", "s1", "hi")
	id := e.sent("--source", "x", "--session", "s1", "--agent", "a2", "hello")
	g := e.start("gateway")
	g.waitLine("[gateway] source x: failed (module_failed)", `session "s1" belongs to agent "a1", not "a2"`)
	if r := g.interrupt(); r.code != cli.ExitOK {
		t.Fatalf("gateway: %v", r)
	}
	ins := e.inputs("x")
	if len(ins) != 1 || ins[0].ID != id || ins[0].State != session.InputRefused || !strings.Contains(ins[0].Reason, `belongs to agent "a1"`) {
		t.Errorf("inbox %+v, want the input refused with the failure", ins)
	}
}

// A turn that newer input interrupts, with a debounce (longer than the
// poll that sees input another process sent), restarts once the source
// has settled, and its line counts every input it answered: the three
// its first run took and the one that interrupted it.
func TestGatewayCommandCountsARestartedTurnsInputs(t *testing.T) {
	t.Parallel()
	llm := fakellm.Start(t)
	arrived, _ := llm.Hold() // the first model call waits until its client goes away
	e := newEnv(t, fakeModelConfig(llm.URL)+"gateway: {debounce: 1s}\n", nil)
	ids := []string{e.sent("--source", "chat", "hi"), e.sent("--source", "chat", "I need a refund"), e.sent("--source", "chat", "order 42")}
	g := e.start("gateway")
	<-arrived
	ids = append(ids, e.sent("--source", "chat", "sorry, 43"))
	line := g.waitLine("[gateway]", "source chat", ": done")
	if want := "4 input(s) (" + strings.Join(ids, ", ") + ")"; !strings.Contains(line, want) {
		t.Errorf("the turn's line %q, want it to say %q", line, want)
	}
	if r := g.interrupt(); r.code != cli.ExitOK {
		t.Fatalf("gateway: %v", r)
	}
}
