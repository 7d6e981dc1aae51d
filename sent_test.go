package agentrt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// What the inspector shows as "what the model was sent" is what the model
// server received: for every model call of two turns of 4 calls each (3
// tool calls), the second turn's after the history was compacted, the
// request derived from the log (Runner.SentRequest) is,
// as JSON, the body a recording OpenAI-compatible server got.
func TestSentRequestIsWhatTheServerGot(t *testing.T) {
	srv, llm, tools := adder(t, 3)
	store := memstore.New()
	// Compaction past 10 messages, by a model of its own on a recording
	// server of its own (which answers "You said: …"): the second turn's
	// calls are sent a summary and the recent messages.
	sumSrv := fakellm.Start(t)
	sum, err := openai.New(openai.Config{Model: "summariser", BaseURL: sumSrv.URL + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{{Name: "a", SystemPrompt: "You add. <b>&</b>",
		Model: llm, Tools: tools, Compaction: agentrt.Compaction{MaxMessages: 10, KeepRecent: 4, Model: sum}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	ctx := t.Context()
	for _, text := range []string{"add things", "again, with \"quotes\" and ünïcode"} {
		for _, err := range r.Run(ctx, "s", agentrt.Input{Text: text, Agent: "a"}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	var calls, compactions []int64
	compacted := false
	for ev, err := range store.Events(ctx, "s", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ms, ok := ev.Data.(*session.ModelStarted); ok && ms.Purpose == "" {
			calls = append(calls, ev.Seq)
		} else if ok && ms.Purpose == "compaction" {
			compactions = append(compactions, ev.Seq)
		}
		compacted = compacted || ev.Type == session.TypeCompaction
	}
	if !compacted {
		t.Error("the history was not compacted: the test does not show a compacted request")
	}
	got := srv.Requests()
	if len(calls) != 8 || len(got) != 8 {
		t.Fatalf("%d model calls in the log, %d requests at the server; want 8 and 8", len(calls), len(got))
	}
	for i, seq := range calls {
		sent, derived := sentBody(t, r, seq)
		if diff := cmp.Diff(got[i], derived); diff != "" {
			t.Errorf("call at event %d: the server got (-) and the log says (+):\n%s", seq, diff)
		}
		if sent.Hooked != agentrt.HookedNone || sent.Model != "gpt-test" || sent.Attempt != 1 {
			t.Errorf("call at event %d: %+v", seq, sent)
		}
	}
	// The summariser's calls: what its server got.
	sums := sumSrv.Requests()
	if len(compactions) == 0 || len(sums) != len(compactions) {
		t.Fatalf("%d compaction calls in the log, %d at the summariser's server", len(compactions), len(sums))
	}
	for i, seq := range compactions {
		_, derived := sentBody(t, r, seq)
		if diff := cmp.Diff(sums[i], derived); diff != "" {
			t.Errorf("compaction at event %d: the server got (-) and the log says (+):\n%s", seq, diff)
		}
	}
	// Bad input: an event that is no model call, and one past the log.
	for _, seq := range []int64{1, 10_000} {
		if _, err := r.SentRequest(ctx, "s", seq); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotFound {
			t.Errorf("SentRequest of event %d: %v, want not_found", seq, err)
		}
	}
	if _, err := r.SentRequest(ctx, "nope", 1); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotFound {
		t.Errorf("SentRequest of no session: %v, want not_found", err)
	}
}

// adder is a recording OpenAI-compatible server whose model calls the
// tool rounds times before it answers, the OpenAI client of it, and the
// tool it calls: add.
func adder(t *testing.T, rounds int) (*fakellm.Server, model.Model, *tool.Registry) {
	t.Helper()
	srv := fakellm.StartWith(t, fakellm.Options{ToolRounds: rounds})
	llm, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: srv.URL + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	add := tool.Must(tool.New("add", "adds two numbers", func(ctx context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return in.A + in.B, nil
	}))
	tools, err := tool.NewRegistry(add)
	if err != nil {
		t.Fatal(err)
	}
	return srv, llm, tools
}

// sentBody is what the call at event seq of session s was sent, and its
// body decoded.
func sentBody(t *testing.T, r *agentrt.Runner, seq int64) (*agentrt.SentRequest, map[string]any) {
	t.Helper()
	return sentBodyOf(t, r, "s", seq)
}

// sentBodyOf is sentBody of session id.
func sentBodyOf(t *testing.T, r *agentrt.Runner, id string, seq int64) (*agentrt.SentRequest, map[string]any) {
	t.Helper()
	sent, err := r.SentRequest(t.Context(), id, seq)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(sent.Wire, &body); err != nil {
		t.Fatalf("call at event %d: the derived body is not JSON: %v\n%s", seq, err, sent.Wire)
	}
	return sent, body
}

// A plan's calls too: the planner's request and the summary's, derived
// from the log, are what the model got.
func TestSentRequestOfAPlan(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: twoSums}, scripted.Reply{Text: "2+2 is 4 and 3*3 is 9."}).Record()
	a := planAgent(t, m, agentrt.PlanExecute{})
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	if res := e.run(t, id, "what are 2+2 and 3*3?"); res.Status != session.StatusDone {
		t.Fatalf("run: %s", res.Status)
	}
	var seqs []int64
	for _, ev := range storedLog(t, e.store, id) {
		if ms, ok := ev.Data.(*session.ModelStarted); ok {
			seqs = append(seqs, ev.Seq)
			if ms.Purpose != "plan" && ms.Purpose != "summary" {
				t.Errorf("a call for %q", ms.Purpose)
			}
		}
	}
	got := m.Requests()
	if len(seqs) != 2 || len(got) != 2 {
		t.Fatalf("%d calls in the log, %d at the model; want 2 and 2", len(seqs), len(got))
	}
	for i, seq := range seqs {
		sent, err := e.r.SentRequest(context.Background(), id, seq)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got[i], sent.Request); diff != "" {
			t.Errorf("call at event %d: the model got (-), the log says (+):\n%s", seq, diff)
		}
	}
}

// What a before-model hook changed is recorded with the call's reply, and
// is what the inspector shows: the recorded request's body is what the
// server got; a call the hooks left alone is derived as ever; a request
// too large to record is known by its digest.
func TestSentRequestWithHooks(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want string // Hooked of the changed calls
	}{
		{"recorded", 0, agentrt.HookedRecorded},
		{"digest", -1, agentrt.HookedDigest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, llm, tools := adder(t, 2)
			a := &agentrt.Agent{Name: "a", SystemPrompt: "You add.", Model: llm, Tools: tools}
			// The hook changes the requests of rounds 2 and on, in place
			// (as hooks may): the system prompt and a parameter.
			var hookedReqs [][]byte
			a.Hooks.BeforeModel(0, func(_ context.Context, info agentrt.HookInfo, req *model.Request) (*model.Request, error) {
				if info.Round < 2 {
					return req, nil
				}
				req.System += " Today is Sunday."
				req.Temperature = new(0.5)
				b, _ := json.Marshal(req)
				hookedReqs = append(hookedReqs, b)
				return req, nil
			})
			r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}, MaxHookedRequest: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close(context.Background())
			for _, err := range r.Run(t.Context(), "s", agentrt.Input{Text: "add things", Agent: "a"}) {
				if err != nil {
					t.Fatal(err)
				}
			}
			var calls []int64
			for ev, err := range r.Store().Events(t.Context(), "s", 0) {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := ev.Data.(*session.ModelStarted); ok {
					calls = append(calls, ev.Seq)
				}
			}
			got := srv.Requests()
			if len(calls) != 3 || len(got) != 3 || len(hookedReqs) != 2 {
				t.Fatalf("%d calls in the log, %d at the server, %d hooked; want 3, 3, 2", len(calls), len(got), len(hookedReqs))
			}
			for i, seq := range calls {
				sent, derived := sentBody(t, r, seq)
				switch {
				case i == 0:
					if sent.Hooked != agentrt.HookedUnchanged {
						t.Errorf("call %d: hooked %q, want unchanged", i, sent.Hooked)
					}
					if diff := cmp.Diff(got[i], derived); diff != "" {
						t.Errorf("call %d: the server got (-) and the log says (+):\n%s", i, diff)
					}
				case sent.Hooked != tc.want:
					t.Errorf("call %d: hooked %q, want %q", i, sent.Hooked, tc.want)
				case tc.want == agentrt.HookedRecorded:
					if diff := cmp.Diff(got[i], derived); diff != "" {
						t.Errorf("call %d: the server got (-) and the record says (+):\n%s", i, diff)
					}
				default:
					sum := sha256.Sum256(hookedReqs[i-1])
					if sent.Digest != hex.EncodeToString(sum[:]) {
						t.Errorf("call %d: digest %s, want the hooked request's", i, sent.Digest)
					}
					if cmp.Equal(got[i], derived) {
						t.Errorf("call %d: the derived request is what the server got, but the hook changed it", i)
					}
				}
			}
		})
	}
}
