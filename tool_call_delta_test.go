package agentrt_test

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/modeltest"
	"github.com/agentrt/agentrt/session"
)

// liveDelta is a tool_call_delta event and the type of the last committed
// event before it.
type liveDelta struct {
	d     session.ToolCallDelta
	after session.Type
}

// splitLive separates a run's events into the committed ones and its
// tool_call_delta events.
func splitLive(t *testing.T, evs []*session.Event) (committed []*session.Event, deltas []liveDelta) {
	t.Helper()
	var last session.Type
	for _, ev := range evs {
		if ev.Seq != 0 {
			committed = append(committed, ev)
			last = ev.Type
			continue
		}
		if d, ok := ev.Data.(*session.ToolCallDelta); ok {
			if ev.Type != session.TypeToolCallDelta {
				t.Errorf("a tool_call_delta payload in an event of type %s", ev.Type)
			}
			deltas = append(deltas, liveDelta{d: *d, after: last})
		}
	}
	return committed, deltas
}

// streamedDeltas streams m's reply and returns its non-empty tool call
// fragments, as the runtime should pass them on.
func streamedDeltas(t *testing.T, m model.Model) []session.ToolCallDelta {
	t.Helper()
	var out []session.ToolCallDelta
	for c, err := range m.Stream(context.Background(), modeltest.Request()) {
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range c.ToolCalls {
			if d.Arguments != "" || d.ID != "" || d.Name != "" {
				out = append(out, session.ToolCallDelta{Index: d.Index, CallID: d.ID, Name: d.Name, Arguments: d.Arguments})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the stream has no tool call fragments: the test checks nothing")
	}
	return out
}

// checkDeltas checks that deltas are want, in order, all streamed during
// the first model call, and that each call's fragments add up to the call
// of that call's model_finished.
func checkDeltas(t *testing.T, committed []*session.Event, deltas []liveDelta, want []session.ToolCallDelta) {
	t.Helper()
	got := make([]session.ToolCallDelta, len(deltas))
	for i, d := range deltas {
		got[i] = d.d
		if d.after != session.TypeModelStarted {
			t.Errorf("delta %d follows %s, want it during the model call (after model_started)", i, d.after)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool_call_delta events (-streamed +run's):\n%s", diff)
	}
	var fin *session.ModelFinished
	for _, ev := range committed {
		if d, ok := ev.Data.(*session.ModelFinished); ok {
			fin = d
			break
		}
	}
	if fin == nil || len(fin.ToolCalls) == 0 {
		t.Fatalf("the first model_finished has no tool calls: %+v", fin)
	}
	type call struct{ ID, Name, Arguments string }
	assembled := make([]call, len(fin.ToolCalls))
	for _, d := range got {
		if d.Index < 0 || d.Index >= len(assembled) {
			t.Fatalf("delta index %d, the reply has %d calls", d.Index, len(fin.ToolCalls))
		}
		c := &assembled[d.Index]
		c.ID += d.CallID
		c.Name += d.Name
		c.Arguments += d.Arguments
	}
	final := make([]call, len(fin.ToolCalls))
	for i, c := range fin.ToolCalls {
		final[i] = call{c.ID, c.Name, string(c.Arguments)}
	}
	if diff := cmp.Diff(final, assembled); diff != "" {
		t.Errorf("fragments put together (+) differ from model_finished's calls (-):\n%s", diff)
	}
}

// serveFiles answers the first request with the recorded transcript
// first and every later one with then.
func serveFiles(t *testing.T, first, then string) *httptest.Server {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{first, then} {
		b, err := fs.ReadFile(modeltest.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := then
		if calls.Add(1) == 1 {
			name = first
		}
		modeltest.WriteResponse(w, name, files[name])
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A real provider's streamed tool calls become tool_call_delta events, in
// the order the stream sent them, and put together they are the calls
// model_finished records.
func TestToolCallDeltasFromRecordedStreams(t *testing.T) {
	newOpenAI := func(t *testing.T, url string) model.Model {
		m, err := openai.New(openai.Config{BaseURL: url, Model: "gpt-4o", APIKey: "sk-test"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	newAnthropic := func(t *testing.T, url string) model.Model {
		m, err := anthropic.New(anthropic.Config{BaseURL: url, Model: "claude-sonnet-4-5", APIKey: "sk-ant-test"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		file, then  string
		newModel    func(*testing.T, string) model.Model
		calls, text int // calls in the reply; whether it has text
	}{
		{"openai-single", "openai-chat-stream-tool-call-single.sse", "openai-chat-stream-text.sse", newOpenAI, 1, 0},
		{"openai-parallel", "openai-chat-stream-tool-calls-parallel.sse", "openai-chat-stream-text.sse", newOpenAI, 2, 0},
		{"anthropic-text-then-tool-use", "anthropic-messages-stream-text-then-tool-use.sse", "anthropic-messages-stream-text.sse", newAnthropic, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := streamedDeltas(t, tc.newModel(t, serveFiles(t, tc.file, tc.then).URL+"/v1"))

			m := tc.newModel(t, serveFiles(t, tc.file, tc.then).URL+"/v1")
			e := newEnv(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "a", Model: m})
			var evs []*session.Event
			tokens := 0
			for ev, err := range e.r.Run(context.Background(), e.session(t, "a"), agentrt.Input{Text: "weather?"}) {
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
				if ev.Type == session.TypeToken {
					tokens++
				}
			}
			committed, deltas := splitLive(t, evs)
			checkDeltas(t, committed, deltas, want)
			if fin, ok := committed[len(committed)-1].Data.(*session.RunFinished); !ok || fin.Status != session.StatusDone {
				t.Errorf("the run did not finish: %v", types(committed))
			}
			if calls := ofIndex(deltas); calls != tc.calls {
				t.Errorf("fragments of %d calls, want %d", calls, tc.calls)
			}
			if tc.text > 0 && tokens == 0 {
				t.Error("the reply's text streamed no token events")
			}
		})
	}
}

// ofIndex counts the calls the deltas belong to.
func ofIndex(deltas []liveDelta) int {
	seen := map[int]bool{}
	for _, d := range deltas {
		seen[d.d.Index] = true
	}
	return len(seen)
}

// deltaScript calls two tools at once, each call's arguments streamed in
// three pieces, then answers.
func deltaScript(name string) *scripted.Model { return scripted.New(name, deltaScriptReplies()...) }

// The scripted model streams a call's arguments in pieces when Chunks is
// above one, interleaving two calls: the run passes every piece on.
func TestToolCallDeltasFromScriptedChunks(t *testing.T) {
	want := streamedDeltas(t, deltaScript("oracle"))
	if len(want) != 6 {
		t.Fatalf("the script streams %d fragments, want 3 per call", len(want))
	}
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(deltaScript("m"), registry(t)))
	var evs []*session.Event
	for ev, err := range e.r.Run(context.Background(), e.session(t, "calc"), agentrt.Input{Text: "two sums"}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	committed, deltas := splitLive(t, evs)
	checkDeltas(t, committed, deltas, want)
	// Live only: the store has none.
	for _, ev := range storedLog(t, e.store, evs[0].SessionID) {
		if ev.Type == session.TypeToolCallDelta {
			t.Errorf("a tool_call_delta was stored: %+v", ev)
		}
	}
}

// A watcher in the process sees the deltas of a run started in the
// background, as it sees its tokens.
func TestToolCallDeltasWatched(t *testing.T) {
	m := scripted.New("m", append([]scripted.Reply{{Text: "warm"}}, deltaScriptReplies()...)...)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := int64(len(e.run(t, id, "warm up").Events))

	ready := make(chan struct{})
	watched := make(chan []*session.Event, 1)
	go func() {
		var evs []*session.Event
		for ev, err := range e.r.Watch(ctx, id, 0) {
			if err != nil {
				t.Error(err)
				break
			}
			if ev.Seq == warm {
				close(ready) // subscribed, and caught up with the log
				continue
			}
			if ev.Seq > warm || ev.Seq == 0 {
				evs = append(evs, ev)
			}
			if ev.Type == session.TypeRunFinished && ev.Seq > warm {
				break
			}
		}
		watched <- evs
	}()
	wait(t, ready)
	h, err := e.r.Start(ctx, id, agentrt.Input{Text: "two sums"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := h.Wait(ctx); err != nil || res.Status != session.StatusDone {
		t.Fatalf("wait: %+v %v", res, err)
	}
	committed, deltas := splitLive(t, wait(t, watched))
	checkDeltas(t, committed, deltas, streamedDeltas(t, deltaScript("oracle")))
}

func deltaScriptReplies() []scripted.Reply {
	return []scripted.Reply{
		{Text: "Both at once.", Chunks: 3, ToolCalls: []scripted.Call{
			{ID: "call_a", Name: "calculator", Arguments: `{"expression":"21*2+5"}`},
			{ID: "call_b", Name: "calculator", Arguments: `{"expression":"6*7"}`},
		}},
		{Text: "47 and 42"},
	}
}

// A quiet model call (a plan, a summary: not the answer) streams no
// deltas, even when its reply calls tools; the conversation's call does.
func TestToolCallDeltasNotFromQuietCalls(t *testing.T) {
	probe := scripted.New("probe",
		scripted.Reply{Chunks: 4, ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Chunks: 4, ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2+2"}`)}},
	)
	a := calcAgent(deltaScript("m"), registry(t))
	a.Executors = map[agentrt.Kind]agentrt.Executor{agentrt.KindCallModel: func(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
		if _, err := x.Complete(ctx, agentrt.ModelCall{Purpose: "probe", Model: probe, Quiet: true}); err != nil {
			return err
		}
		return agentrt.CallModel(ctx, x, ins)
	}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	var evs []*session.Event
	for ev, err := range e.r.Run(context.Background(), e.session(t, "calc"), agentrt.Input{Text: "two sums"}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if probe.Remaining() != 0 {
		t.Fatalf("the quiet call was made %d times, want 2", probe.Calls())
	}
	quiet := false
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *session.ModelStarted:
			quiet = d.Purpose == "probe"
		case *session.ToolCallDelta:
			if quiet {
				t.Errorf("a quiet call streamed %+v", d)
			}
		}
	}
	committed, deltas := splitLive(t, evs)
	var conversation []*session.Event // without the quiet calls' events
	for _, ev := range committed {
		if d, ok := ev.Data.(*session.ModelFinished); ok && d.Purpose != "" {
			continue
		}
		conversation = append(conversation, ev)
	}
	checkDeltas(t, conversation, deltas, streamedDeltas(t, deltaScript("oracle")))
}
