package agentrt_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// An agent with no compaction settings compacts past
// DefaultCompactMessages messages; with Off it never does.
func TestCompactionDefaultMessages(t *testing.T) {
	for _, off := range []bool{false, true} {
		// After ten rounds of a call and its result the history holds 21
		// messages: the summary is asked for before the eleventh call.
		var replies []scripted.Reply
		for i := range 10 {
			replies = append(replies, calcReply(i))
		}
		if !off {
			replies = append(replies, scripted.Reply{Text: "ten sums"})
		}
		replies = append(replies, calcReply(10), scripted.Reply{Text: "done"})
		m := scripted.New("m", replies...).Record()
		a := calcAgent(m, registry(t))
		a.Compaction.Off = off
		a.LoopDetection.Off = true
		a.Limits.MaxRounds = 20
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "calc")
		res := e.run(t, id, "add")
		if res.Status != session.StatusDone || res.Text != "done" {
			t.Fatalf("off %v: run: %s %q %+v", off, res.Status, res.Text, res.Err)
		}
		cs := compactions(res.Events)
		reqs := m.Requests()
		last := reqs[len(reqs)-1].Messages
		switch {
		case off && (len(cs) != 0 || len(last) != 23):
			t.Errorf("off: %d compactions, the last request has %d messages, want none and 23", len(cs), len(last))
		case !off && (len(cs) != 1 || cs[0].Reason != "max_messages" || cs[0].CompactedCount != 21-agentrt.DefaultKeepRecent ||
			!strings.HasPrefix(last[0].Text(), "[compacted] ten sums") || len(last) != 1+agentrt.DefaultKeepRecent+2):
			t.Errorf("default: compactions %+v; the last request has %d messages, the first %q", cs, len(last), last[0].Text())
		}
	}
}

// Past DefaultCompactChars characters an agent with no settings compacts,
// however few its messages.
func TestCompactionDefaultChars(t *testing.T) {
	long := strings.Repeat("x", agentrt.DefaultCompactChars/5+1)
	// Five turns of a long question and a short answer: before the fifth
	// answer, nine messages and more than DefaultCompactChars characters.
	m := scripted.New("m", scripted.Reply{Text: "ok"}, scripted.Reply{Text: "ok"}, scripted.Reply{Text: "ok"}, scripted.Reply{Text: "ok"},
		scripted.Reply{Text: "long questions"}, scripted.Reply{Text: "ok"})
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, nil))
	id := e.session(t, "calc")
	var cs []*session.Compaction
	for range 5 {
		res := e.run(t, id, long)
		if res.Status != session.StatusDone || res.Text != "ok" {
			t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
		}
		cs = append(cs, compactions(res.Events)...)
	}
	if len(cs) != 1 || cs[0].Reason != "max_chars" || cs[0].CompactedCount != 1 || cs[0].Summary != "long questions" {
		t.Fatalf("compactions %+v", cs)
	}
}

// Contradictory or unusable compaction settings are refused when the
// runner is made.
func TestCompactionSettingsChecked(t *testing.T) {
	for _, tc := range []struct {
		c    agentrt.Compaction
		want string // "" : accepted
	}{
		{agentrt.Compaction{Off: true}, ""},
		{agentrt.Compaction{KeepRecent: agentrt.DefaultCompactMessages - 1}, ""},
		{agentrt.Compaction{KeepRecent: 30, MaxChars: 1000}, ""},
		{agentrt.Compaction{Off: true, MaxMessages: 40}, "compaction: off, yet limits, keep_recent or a model are set"},
		{agentrt.Compaction{Off: true, Model: scripted.New("s")}, "compaction: off, yet limits, keep_recent or a model are set"},
		{agentrt.Compaction{KeepRecent: agentrt.DefaultCompactMessages}, "compaction: keep_recent (20) must be below 20, the default max_messages; set max_messages above it"},
		{agentrt.Compaction{MaxMessages: 8}, "compaction: max_messages (8) must be above keep_recent (8)"},
	} {
		a := calcAgent(scripted.New("m"), nil)
		a.Compaction = tc.c
		_, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}
