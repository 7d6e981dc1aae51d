package agentrt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

func calcReply(i int) scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", fmt.Sprintf(`{"expression":"%d+1"}`, i))}}
}

func compactions(events []*session.Event) []*session.Compaction {
	var out []*session.Compaction
	for _, e := range events {
		if d, ok := e.Data.(*session.Compaction); ok {
			out = append(out, d)
		}
	}
	return out
}

// Past max_messages, the older history is summarised by the agent's model
// before the next round: the request then begins with the summary, keeps
// the recent messages (never a tool result without its call), the log
// keeps everything, and a replay of the log gives the same state.
func TestCompactionSummarises(t *testing.T) {
	// user + 4 rounds of (call, result) = 9 messages; over 8, the fifth
	// round's call is preceded by the summary call.
	replies := []scripted.Reply{calcReply(1), calcReply(2), calcReply(3), calcReply(4),
		{Text: "The user asked for sums; 1+1=2, 2+1=3, 3+1=4 and 4+1=5 were computed."},
		calcReply(5), {Text: "done"}}
	m := scripted.New("m", replies...).Record()
	a := calcAgent(m, registry(t))
	a.Compaction = agentrt.Compaction{MaxMessages: 8, KeepRecent: 4}
	var hooked []*session.Compaction
	a.Hooks.OnCompaction(0, func(_ context.Context, _ agentrt.HookInfo, c *session.Compaction) { hooked = append(hooked, c) })
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "add things")
	if res.Status != session.StatusDone {
		t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
	}
	log := storedLog(t, store, id)
	cs := compactions(log)
	if len(cs) != 1 || cs[0].Reason != "max_messages" || cs[0].CompactedCount != 5 || cs[0].Truncated ||
		cs[0].Summary != "The user asked for sums; 1+1=2, 2+1=3, 3+1=4 and 4+1=5 were computed." {
		t.Fatalf("compactions %+v", cs)
	}
	if len(hooked) != 1 || hooked[0].CompactedCount != 5 {
		t.Errorf("OnCompaction saw %+v", hooked)
	}
	reqs := m.Requests()
	// The summariser's request: its own system prompt and the transcript.
	if sum := reqs[4]; !strings.Contains(sum.System, "You compact conversations") ||
		!strings.Contains(sum.Messages[0].Text(), "[assistant calls calculator] {\"expression\":\"1+1\"}") {
		t.Fatalf("summary request: %q / %q", sum.System, sum.Messages[0].Text())
	}
	// The next round's request: the summary, then the kept messages,
	// beginning with an assistant call (not its result).
	next := reqs[5].Messages
	if len(next) != 5 || next[0].Role != model.RoleSystem || !strings.HasPrefix(next[0].Text(), "[compacted] The user asked") ||
		next[1].Role != model.RoleAssistant || len(next[1].ToolCalls) != 1 {
		t.Fatalf("request after compaction: %d messages, first %s %q, second %s", len(next), next[0].Role, next[0].Text(), next[1].Role)
	}
	// Everything is still in the log; a replay folds the same state.
	if n := len(toolResults(log)); n != 5 {
		t.Errorf("%d tool results in the log, want 5", n)
	}
	live, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	replayed := agentrt.NewState(id, "calc")
	for _, ev := range log {
		if err := replayed.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(live.Messages, replayed.Messages); diff != "" {
		t.Errorf("replayed messages differ (-loaded +replayed):\n%s", diff)
	}
}

// A summariser that fails, or says nothing, leaves a truncated history
// instead, and says why; compaction.model writes the summary when set.
func TestCompactionFallbacks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		summary   scripted.Reply
		own       bool // compaction.model answers
		truncated bool
		errText   string
	}{
		{"fails", scripted.Reply{Error: "summariser down", ErrorCode: model.CodeAuth}, false, true, "the summariser failed: "},
		{"says nothing", scripted.Reply{Text: "  "}, false, true, "the summariser returned nothing"},
		{"compaction model", scripted.Reply{Text: "short summary"}, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := []scripted.Reply{calcReply(1), calcReply(2), calcReply(3), calcReply(4)}
			var summariser model.Model
			if tc.own {
				summariser = scripted.New("small", tc.summary)
			} else {
				replies = append(replies, tc.summary)
			}
			a := calcAgent(scripted.New("m", append(replies, scripted.Reply{Text: "done"})...), registry(t))
			a.Compaction = agentrt.Compaction{MaxMessages: 8, KeepRecent: 4, Model: summariser}
			e := newEnv(t, nil, agentrt.Config{}, a)
			id := e.session(t, "calc")
			res := e.run(t, id, "add things")
			if res.Status != session.StatusDone {
				t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
			}
			cs := compactions(storedLog(t, e.store, id))
			if len(cs) != 1 || cs[0].Truncated != tc.truncated || !strings.HasPrefix(cs[0].Error, tc.errText) || (tc.errText == "") != (cs[0].Error == "") {
				t.Fatalf("compactions %+v", cs)
			}
			if tc.truncated && !strings.Contains(cs[0].Summary, "(truncated: the summary could not be written) [user] add things") {
				t.Errorf("truncated summary %q", cs[0].Summary)
			}
			if tc.own && cs[0].Summary != "short summary" {
				t.Errorf("summary %q, want compaction.model's", cs[0].Summary)
			}
		})
	}
}

// A request the provider refuses as too long is compacted, whatever the
// settings, and made once more.
func TestCompactionOnContextLength(t *testing.T) {
	replies := []scripted.Reply{calcReply(1), calcReply(2), calcReply(3),
		{Error: "prompt is too long", ErrorCode: model.CodeContextLength},
		{Text: "summary of the sums"},
		{Text: "done"}}
	a := calcAgent(scripted.New("m", replies...), registry(t))
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "add things")
	if res.Status != session.StatusDone || res.Text != "done" {
		t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
	}
	log := storedLog(t, e.store, id)
	cs := compactions(log)
	if len(cs) != 1 || cs[0].Reason != "context_length" || cs[0].Summary != "summary of the sums" {
		t.Fatalf("compactions %+v", cs)
	}
	var codes []string
	for _, ev := range log {
		if d, ok := ev.Data.(*session.Error); ok {
			codes = append(codes, d.Code)
		}
	}
	if fmt.Sprint(codes) != "[context_length]" {
		t.Errorf("error events %v, want the refused attempt recorded", codes)
	}
}

// A second refusal after compacting fails the run.
func TestCompactionOnContextLengthOnce(t *testing.T) {
	tooLong := scripted.Reply{Error: "prompt is too long", ErrorCode: model.CodeContextLength}
	replies := []scripted.Reply{calcReply(1), calcReply(2), calcReply(3), tooLong, {Text: "summary"}, tooLong}
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m", replies...), registry(t)))
	id := e.session(t, "calc")
	res, _ := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "add things"}))
	if res.Status != session.StatusFailed || res.Reason != "context_length" {
		t.Fatalf("run: %s %s", res.Status, res.Reason)
	}
}

// Bad settings are refused with the reason.
func TestCompactionBadConfig(t *testing.T) {
	for c, want := range map[agentrt.Compaction]string{
		{MaxMessages: 10, KeepRecent: 2}: `agent "calc": compaction: keep_recent (2) must be at least 4`,
		{MaxMessages: 6}:                 `agent "calc": compaction: max_messages (6) must be above keep_recent (8)`,
		{MaxChars: -1}:                   `agent "calc": compaction: limits must not be negative (max_messages 0, max_chars -1, max_tokens 0, keep_recent 0)`,
	} {
		a := calcAgent(scripted.New("m"), registry(t))
		a.Compaction = c
		_, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
}

// max_tokens counts with tiktoken for a model it knows (gpt-4o here), and
// estimates for one it does not.
func TestCompactionMaxTokens(t *testing.T) {
	for _, name := range []string{"gpt-4o", "some-local-model"} {
		t.Run(name, func(t *testing.T) {
			long := strings.Repeat("tell me about the numbers one two three ", 30) // ~240 tokens
			replies := []scripted.Reply{calcReply(1), calcReply(2), {Text: "summary"}, {Text: "done"}}
			a := calcAgent(scripted.New(name, replies...), registry(t))
			a.Compaction = agentrt.Compaction{MaxTokens: 200, KeepRecent: 4}
			e := newEnv(t, nil, agentrt.Config{}, a)
			id := e.session(t, "calc")
			// The first round is over the limit already, but there is
			// nothing before the kept messages to compact until the third:
			// then the long question goes into the summary.
			res := e.run(t, id, long)
			if res.Status != session.StatusDone {
				t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
			}
			cs := compactions(storedLog(t, e.store, id))
			if len(cs) != 1 || cs[0].Reason != "max_tokens" || cs[0].CompactedCount != 1 || cs[0].Summary != "summary" {
				t.Fatalf("compactions %+v", *cs[0])
			}
		})
	}
}

// OnAgentEnd runs before the final event, with the answer; a hook that
// panics fails the run with an error event instead of crashing it.
func TestAgentEndHookAndPanics(t *testing.T) {
	a := calcAgent(scripted.New("m", scripted.Reply{Text: "42"}), registry(t))
	var saw []string
	a.Hooks.OnAgentEnd(0, func(_ context.Context, info agentrt.HookInfo, st session.Status, text string) {
		saw = append(saw, fmt.Sprint(st, " ", text))
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	if res := e.run(t, id, "?"); res.Status != session.StatusDone || fmt.Sprint(saw) != "[done 42]" {
		t.Fatalf("run %s, hook saw %v", res.Status, saw)
	}

	for _, kind := range []string{"before-model", "agent-end", "compaction"} {
		t.Run(kind, func(t *testing.T) {
			a := calcAgent(scripted.New("m", calcReply(1), calcReply(2), calcReply(3), calcReply(4), scripted.Reply{Text: "s"}, scripted.Reply{Text: "42"}), registry(t))
			a.Compaction = agentrt.Compaction{MaxMessages: 8, KeepRecent: 4}
			boom := func() { panic("boom") }
			switch kind {
			case "before-model":
				a.Hooks.BeforeModel(0, func(context.Context, agentrt.HookInfo, *model.Request) (*model.Request, error) {
					boom()
					return nil, nil
				})
			case "agent-end":
				a.Hooks.OnAgentEnd(0, func(context.Context, agentrt.HookInfo, session.Status, string) { boom() })
			case "compaction":
				a.Hooks.OnCompaction(0, func(context.Context, agentrt.HookInfo, *session.Compaction) { boom() })
			}
			e := newEnv(t, nil, agentrt.Config{}, a)
			id := e.session(t, "calc")
			res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "?"}))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "hook_panic" || !strings.Contains(res.Err.Message, "hook panicked: boom") {
				t.Fatalf("run: %s %+v", res.Status, res.Err)
			}
		})
	}
}
