package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The input requests of protocol 2026-07-28 (SEP-2322): a call whose
// turn waits for people ends with its pending requests as input
// requests, and the client calls again with the answers and the request
// state. These tests speak it as agentrt mcp serve serves it (the SDK's
// stateful Streamable HTTP handler answers 2025-11-25 to a client that
// asks for 2026-07-28).

// countCalls is a server middleware that counts tools/call requests.
func countCalls(n *atomic.Int32) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				n.Add(1)
			}
			return next(ctx, method, req)
		}
	}
}

// Several requests in one call: two approvals at once (a parallel pair of
// calls), asked together and answered in one round; two approvals one
// after the other (a call in each of two rounds), asked in a round each;
// one approved and one declined. The call ends with the turn's answer.
func TestInputRequestsSeveral(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		message string
		decide  func(args string) *sdk.ElicitResult
		calls   int32    // tools/call requests: the first and a retry per round
		asked   []string // the calls the elicitations show, sorted
		want    string
	}{
		{"parallel pair", `call deploy {"env":"a"} && deploy {"env":"b"}`, approveAll, 2,
			[]string{`deploy {"env":"a"}`, `deploy {"env":"b"}`}, `echo: "deployed to a"; "deployed to b"`},
		{"one after the other", `call deploy {"env":"a"} then deploy {"env":"b"}`, approveAll, 3,
			[]string{`deploy {"env":"a"}`, `deploy {"env":"b"}`}, `echo: "deployed to b"`},
		{"one declined", `call deploy {"env":"a"} && deploy {"env":"b"}`, func(args string) *sdk.ElicitResult {
			if strings.Contains(args, `"b"`) {
				return &sdk.ElicitResult{Action: "decline"}
			}
			return approve()
		}, 2, []string{`deploy {"env":"a"}`, `deploy {"env":"b"}`}, `echo: "deployed to a"; `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			var n atomic.Int32
			cs := f.connectStdio(t, "", &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				_, call, _ := strings.Cut(req.Params.Message, "\n")
				mu.Lock()
				asked = append(asked, call)
				mu.Unlock()
				return tc.decide(call), nil
			}}, countCalls(&n))
			if v := protocol(cs); v != "2026-07-28" {
				t.Fatalf("protocol %s: want 2026-07-28", v)
			}
			res, out := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": tc.message}})
			if res.IsError || out.Status != "done" || !strings.HasPrefix(out.Answer, tc.want) {
				t.Errorf("result %q %+v: want done with %q", text(res), out, tc.want)
			}
			mu.Lock()
			slices.Sort(asked)
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("asked about %q: want %q", asked, tc.asked)
			}
			mu.Unlock()
			if got := n.Load(); got != tc.calls {
				t.Errorf("%d tools/call requests: want %d", got, tc.calls)
			}
			if tc.name == "one declined" && !strings.Contains(out.Answer, "rejected") {
				t.Errorf("answer %q: want b's call rejected", out.Answer)
			}
		})
	}
}

func approve() *sdk.ElicitResult {
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}
}

func approveAll(string) *sdk.ElicitResult { return approve() }

// manual is a 2026-07-28 client that handles input requests itself.
func manual(t *testing.T, f *fixture) *sdk.ClientSession {
	t.Helper()
	return f.connectStdio(t, "", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("elicitation/create sent to a 2026-07-28 client")
			return nil, nil
		},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	}, nil)
}

// needsInput checks that res asks for input and returns its requests'
// ids, sorted.
func needsInput(t *testing.T, res *sdk.CallToolResult) []string {
	t.Helper()
	if !res.NeedsInput() || res.RequestState == "" || res.IsError {
		t.Fatalf("result %q (input requests %d, state %q): want input required", text(res), len(res.InputRequests), res.RequestState)
	}
	var ids []string
	for id, ir := range res.InputRequests {
		ep, ok := ir.(*sdk.ElicitParams)
		if !ok || ep.Meta["agentrt/request"] != id || ep.Meta["agentrt/kind"] != "approval" {
			t.Errorf("input request %s: %#v; want an approval's form", id, ir)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// A pair of approvals answered in two rounds: the first retry answers
// one, and its result asks for the other alone; the second answers it and
// ends the call with the answer.
func TestInputRequestsInTwoRounds(t *testing.T) {
	f := newFixture(t)
	cs := manual(t, f)
	params := &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": `call deploy {"env":"a"} && deploy {"env":"b"}`}}
	res, _ := call(t, cs, params)
	ids := needsInput(t, res)
	if len(ids) != 2 {
		t.Fatalf("input requests %q: want two", ids)
	}
	retry := *params
	retry.InputResponses = sdk.InputResponseMap{ids[0]: approve()}
	retry.RequestState = res.RequestState
	res, _ = call(t, cs, &retry)
	if left := needsInput(t, res); !slices.Equal(left, ids[1:]) {
		t.Fatalf("after answering %s: asked %q; want %q", ids[0], left, ids[1:])
	}
	retry.InputResponses = sdk.InputResponseMap{ids[1]: approve()}
	retry.RequestState = res.RequestState
	res, out := call(t, cs, &retry)
	if res.IsError || res.NeedsInput() || out.Status != "done" || out.Answer != `echo: "deployed to a"; "deployed to b"` {
		t.Errorf("result %q %+v: want done, both deployed", text(res), out)
	}
}

// Bad input to a retry is the tool's error result with a code saying
// why, and records no answer: an answer to a request the session never
// asked (beside a good one), a request state this server did not give,
// one naming a session that does not exist or another agent's, and an
// answer the request does not take.
func TestInputRequestsBadInput(t *testing.T) {
	f := newFixture(t)
	cs := manual(t, f)
	params := &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": `call deploy {"env":"a"} && deploy {"env":"b"}`}}
	res, _ := call(t, cs, params)
	ids := needsInput(t, res)
	var st struct {
		Session string `json:"s"`
	}
	if err := json.Unmarshal([]byte(res.RequestState), &st); err != nil {
		t.Fatal(err)
	}
	_, other := call(t, f.connectStdio(t, "", nil, nil), &sdk.CallToolParams{Name: "other", Arguments: map[string]any{"message": "hi"}})
	for _, tc := range []struct {
		name      string
		responses sdk.InputResponseMap
		state     string
		want      string
	}{
		// The answers are a map, which the server walks in no fixed
		// order: asked a few times, a server that recorded the good ones
		// before it saw the bad one would be caught.
		{"unknown request", sdk.InputResponseMap{ids[0]: approve(), ids[1]: approve(), "req_nope": approve()}, res.RequestState, "unknown_request: "},
		{"unknown request again", sdk.InputResponseMap{ids[0]: approve(), ids[1]: approve(), "req_nope": approve()}, res.RequestState, "unknown_request: "},
		{"unknown request a third time", sdk.InputResponseMap{ids[0]: approve(), ids[1]: approve(), "req_nope": approve()}, res.RequestState, "unknown_request: "},
		{"unknown request a fourth time", sdk.InputResponseMap{ids[0]: approve(), ids[1]: approve(), "req_nope": approve()}, res.RequestState, "unknown_request: "},
		{"state not JSON", sdk.InputResponseMap{ids[0]: approve()}, "not json", "malformed_request: "},
		{"state without a session", sdk.InputResponseMap{ids[0]: approve()}, `{"r":"x"}`, "malformed_request: "},
		{"state of no session", sdk.InputResponseMap{ids[0]: approve()}, `{"s":"nope"}`, "not_found: "},
		{"state of another agent's session", sdk.InputResponseMap{ids[0]: approve()}, `{"s":"` + other.SessionID + `"}`, "wrong_agent: "},
		{"bad decision", sdk.InputResponseMap{ids[0]: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "maybe"}}}, res.RequestState, "bad_decision: request " + ids[0] + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retry := *params
			retry.InputResponses, retry.RequestState = tc.responses, tc.state
			res, _ := call(t, cs, &retry)
			if !res.IsError || !strings.HasPrefix(text(res), tc.want) {
				t.Errorf("result %v %q: want an error result starting %q", res.IsError, text(res), tc.want)
			}
			ss, err := f.r.Load(tenantCtx(t, "ta"), st.Session)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss.Requests) != 2 {
				t.Errorf("%d requests pending after a refused answer: want both", len(ss.Requests))
			}
		})
	}
	// The unknown request's error names what the session waits for.
	retry := *params
	retry.InputResponses, retry.RequestState = sdk.InputResponseMap{"req_nope": approve()}, res.RequestState
	if res, _ := call(t, cs, &retry); !strings.Contains(text(res), ids[0]) || !strings.Contains(text(res), ids[1]) {
		t.Errorf("%q: want the pending requests named", text(res))
	}
}

// A request answered elsewhere (the REST API) between the input-required
// result and the retry: that answer stands, and the retry follows the run
// it continued to its end.
func TestInputRequestAnsweredElsewhere(t *testing.T) {
	f := newFixture(t)
	cs := manual(t, f)
	params := &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": `call deploy {"env":"a"}`}}
	res, _ := call(t, cs, params)
	ids := needsInput(t, res)
	var st struct {
		Session string `json:"s"`
	}
	if err := json.Unmarshal([]byte(res.RequestState), &st); err != nil {
		t.Fatal(err)
	}
	if code := f.rest(t, "POST", "/v1/sessions/"+st.Session+"/requests/"+ids[0], `{"decision":"reject","reason":"not today"}`, nil); code/100 != 2 {
		t.Fatalf("resolve over REST: %d", code)
	}
	retry := *params
	retry.InputResponses, retry.RequestState = sdk.InputResponseMap{ids[0]: approve()}, res.RequestState
	res, out := call(t, cs, &retry)
	if res.IsError || out.Status != "done" || strings.Contains(out.Answer, "deployed") {
		t.Errorf("result %q %+v: want done with the call rejected (the REST answer)", text(res), out)
	}
}
