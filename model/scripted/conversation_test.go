package scripted_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

// convo builds a conversation request from its messages.
func convo(msgs ...model.Message) *model.Request {
	return &model.Request{Messages: msgs}
}

func user(text string) model.Message { return model.TextMessage(model.RoleUser, text) }

func assistant(text string) model.Message { return model.TextMessage(model.RoleAssistant, text) }

func callMsg(id, name, args string) model.Message {
	return model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}

func resultMsg(id, name, text string) model.Message {
	return model.Message{Role: model.RoleTool, ToolCallID: id, Name: name, Parts: []model.Part{{Type: model.PartText, Text: text}}}
}

// twoTurns is a script for two turns: a tool call and its answer, then a
// second turn's answer.
func twoTurns() []scripted.Reply {
	return []scripted.Reply{
		{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		{Text: "42", Expect: &scripted.Expect{LastToolResultContains: "42"}},
		{Text: "you are welcome", Expect: &scripted.Expect{LastUserContains: "thanks"}},
	}
}

// The requests of twoTurns' conversation, one per model call.
var twoTurnsRequests = []*model.Request{
	convo(user("6*7?")),
	convo(user("6*7?"), callMsg("call_1_1", "calculator", `{"expression":"6*7"}`), resultMsg("call_1_1", "calculator", `{"result":42}`)),
	convo(user("6*7?"), callMsg("call_1_1", "calculator", `{"expression":"6*7"}`), resultMsg("call_1_1", "calculator", `{"result":42}`),
		assistant("42"), user("thanks")),
}

// What a model must answer to each of twoTurnsRequests.
func wantTwoTurns() []*model.Response {
	return []*model.Response{
		{Message: callMsg("call_1_1", "calculator", `{"expression":"6*7"}`), FinishReason: model.FinishToolCalls},
		{Message: assistant("42"), FinishReason: model.FinishStop},
		{Message: assistant("you are welcome"), FinishReason: model.FinishStop},
	}
}

func withoutUsage(rs ...*model.Response) []*model.Response {
	for _, r := range rs {
		r.Usage = model.Usage{}
	}
	return rs
}

// By conversation, a reply is chosen by the request alone: one model
// plays the conversation's calls in order, and a new model (a new
// process) asked at any point plays the reply that follows it, in the
// first turn or the next.
func TestByConversation(t *testing.T) {
	t.Parallel()
	one := scripted.New("s", twoTurns()...).ByConversation()
	var got []*model.Response
	for _, req := range twoTurnsRequests {
		got = append(got, generate(t, one, req))
	}
	if diff := cmp.Diff(wantTwoTurns(), withoutUsage(got...)); diff != "" {
		t.Errorf("one process (-want +got):\n%s", diff)
	}
	if one.Remaining() != 0 || one.Calls() != 3 {
		t.Errorf("Remaining() %d, Calls() %d; want 0, 3", one.Remaining(), one.Calls())
	}

	for i, req := range twoTurnsRequests {
		fresh := scripted.New("s", twoTurns()...).ByConversation()
		got := generate(t, fresh, req)
		if diff := cmp.Diff(wantTwoTurns()[i], withoutUsage(got)[0]); diff != "" {
			t.Errorf("call %d in a new process (-want +got):\n%s", i+1, diff)
		}
		if want := 2 - i; fresh.Remaining() != want {
			t.Errorf("call %d in a new process: Remaining() %d, want %d", i+1, fresh.Remaining(), want)
		}
	}

	// In order, a new model starts again at its first reply whatever the
	// request (the tool call repeats): what ByConversation is for.
	inOrder := scripted.New("s", twoTurns()...)
	if diff := cmp.Diff(wantTwoTurns()[0], withoutUsage(generate(t, inOrder, twoTurnsRequests[1]))[0]); diff != "" {
		t.Errorf("in order, resumed (-want +got):\n%s", diff)
	}
}

// A request past the end of a script played by conversation fails with
// ErrExhausted, saying where the conversation is and how far the script
// goes.
func TestByConversationExhausted(t *testing.T) {
	t.Parallel()
	m := scripted.New("s", twoTurns()...).ByConversation()
	req := convo(append(twoTurnsRequests[2].Messages, assistant("you are welcome"), user("bye"))...)
	_, err := model.Generate(t.Context(), m, req)
	if !errors.Is(err, scripted.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	want := `scripted model "s": the request holds 3 assistant messages, so it asks for reply 4 of a conversation, ` +
		`and the script has 3 successful replies (played by conversation); last message: user: "bye"`
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	// Asked again, it fails again: nothing moved.
	if _, err := model.Generate(t.Context(), m, req); !errors.Is(err, scripted.ErrExhausted) {
		t.Errorf("second call: %v", err)
	}
	// An empty script has no first reply.
	_, err = model.Generate(t.Context(), scripted.New("e").ByConversation(), convo(user("hi")))
	if !errors.Is(err, scripted.ErrExhausted) {
		t.Errorf("empty script: %v", err)
	}
}

// Failing replies leave no assistant message: by conversation they are
// failed attempts of the success that follows them. A retry of the same
// request plays the next one; another conversation at the same point
// counts its own attempts; a last round of failures only fails for good.
func TestByConversationFailures(t *testing.T) {
	t.Parallel()
	m := scripted.New("s",
		scripted.Reply{ErrorCode: model.CodeRateLimited},
		scripted.Reply{Text: "first"},
		scripted.Reply{Error: "cut", Text: "par"},
		scripted.Reply{ErrorCode: model.CodeServer},
		scripted.Reply{Text: "second"},
		scripted.Reply{ErrorCode: model.CodeServer},
	).ByConversation()
	outcome := func(req *model.Request) string {
		resp, err := model.Generate(t.Context(), m, req)
		switch me, ok := model.AsError(err); {
		case ok:
			return string(me.Code)
		case err != nil:
			return err.Error()
		}
		return resp.Message.Text()
	}
	a, b := convo(user("a")), convo(user("b"))
	var got []string
	for _, req := range []*model.Request{a, a, a, b, b} {
		got = append(got, outcome(req))
	}
	a2 := convo(user("a"), assistant("first"), user("more"))
	for range 4 {
		got = append(got, outcome(a2))
	}
	a3 := convo(user("a"), assistant("first"), user("more"), assistant("second"), user("again"))
	for range 2 {
		got = append(got, outcome(a3))
	}
	want := []string{
		"rate_limited", "first", "first", // a: the failure, then the success, again
		"rate_limited", "first", // b counts its own attempts
		"cut", "server", "second", "second",
		"server", "server", // failures only: no success to reach
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	a4 := convo(user("a"), assistant("first"), user("more"), assistant("second"), user("again"), assistant("x"), user("y"))
	_, err := model.Generate(t.Context(), m, a4)
	const past = `scripted model "s": the request holds 3 assistant messages, so it asks for reply 4 of a conversation, ` +
		`and the script has 2 successful replies (played by conversation); last message: user: "y"`
	if !errors.Is(err, scripted.ErrExhausted) || err.Error() != past {
		t.Errorf("past the failures: %v", err)
	}
	// Reset forgets the attempts.
	m.Reset()
	if got := outcome(a); got != "rate_limited" {
		t.Errorf("after Reset: %s, want the first failure again", got)
	}
}

// A script file plays by conversation unless it says play: in_order.
func TestParsePlay(t *testing.T) {
	t.Parallel()
	const replies = `
replies:
  - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}]
  - text: "42"
    expect: {last_tool_result_contains: "42"}
  - text: "you are welcome"
    expect: {last_user_contains: thanks}
`
	for _, play := range []string{"", "play: by_conversation\n"} {
		m, err := scripted.Parse("s", []byte(play+replies))
		if err != nil {
			t.Fatal(err)
		}
		// A new process resumed after the first reply.
		if diff := cmp.Diff(wantTwoTurns()[1], withoutUsage(generate(t, m, twoTurnsRequests[1]))[0]); diff != "" {
			t.Errorf("%q: (-want +got):\n%s", play, diff)
		}
	}
	m, err := scripted.Parse("s", []byte("play: in_order\n"+replies))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"calculator", "42"} {
		got := generate(t, m, twoTurnsRequests[1]) // the same request: in order regardless
		if s := got.Message.Text() + toolNamesOf(got); s != want {
			t.Errorf("in order, call %d: %q, want %q", i+1, s, want)
		}
	}

	_, err = scripted.Parse("bad", []byte("play: randomly\n"+replies))
	want := `bad:1:7: play: unknown way to play "randomly", want by_conversation (the default: the reply that fits the request) or in_order (one reply per call, in order)`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func toolNamesOf(r *model.Response) string {
	s := ""
	for _, c := range r.Message.ToolCalls {
		s += c.Name
	}
	return s
}

// Many conversations at once on one model, each at its own point, under
// -race: each gets the reply that fits it.
func TestByConversationConcurrent(t *testing.T) {
	t.Parallel()
	m := scripted.New("s", twoTurns()...).ByConversation()
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Go(func() {
			k := i % 3
			resp, err := model.Generate(t.Context(), m, twoTurnsRequests[k])
			if err != nil {
				errs <- err
				return
			}
			if diff := cmp.Diff(wantTwoTurns()[k], withoutUsage(resp)[0]); diff != "" {
				errs <- fmt.Errorf("call at reply %d (-want +got):\n%s", k+1, diff)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m.Calls() != 30 || m.Remaining() != 0 {
		t.Errorf("Calls() %d, Remaining() %d", m.Calls(), m.Remaining())
	}
}
