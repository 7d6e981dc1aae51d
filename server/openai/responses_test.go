package openai_test

import (
	"errors"
	"net/http"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt/server"
)

func respParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "assistant", Input: responses.ResponseNewParamsInputUnion{OfString: oa.String(input)}}
}

// A response answers with the agent's reply; previous_response_id
// continues the session that response belongs to.
func TestResponsesNewAndContinue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	var resp *http.Response
	first, err := c.Responses.New(t.Context(), respParams("hello there"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	if first.Status != "completed" || first.OutputText() != "echo: hello there" || first.Usage.TotalTokens != 15 || first.Model != "assistant" {
		t.Fatalf("first response %s %q usage %+v", first.Status, first.OutputText(), first.Usage)
	}
	p := respParams("again")
	p.PreviousResponseID = oa.String(first.ID)
	second, err := c.Responses.New(t.Context(), p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got := sessionOf(t, resp); got != id {
		t.Errorf("previous_response_id went to session %s, want %s", got, id)
	}
	if second.OutputText() != "echo: again" || second.ID == first.ID {
		t.Errorf("second response %s %q", second.ID, second.OutputText())
	}
	// Polling a finished response gives it again.
	got, err := c.Responses.Get(t.Context(), first.ID, responses.ResponseGetParams{})
	if err != nil || got.Status != "completed" || got.OutputText() != "echo: hello there" {
		t.Fatalf("get %s: %+v %v", first.ID, got, err)
	}
}

// A background response answers at once, queued; polling it gives the
// answer when the turn is done, and its stream from the start.
func TestResponsesBackground(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	p := respParams("in the background")
	p.Background = oa.Bool(true)
	bg, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if bg.Status != "queued" || !bg.Background {
		t.Fatalf("background answer %s background=%v; want queued", bg.Status, bg.Background)
	}
	// Following the stream waits for the turn's end, without a sleep.
	st := c.Responses.GetStreaming(t.Context(), bg.ID, responses.ResponseGetParams{})
	last := ""
	for st.Next() {
		last = st.Current().Type
	}
	if err := st.Err(); err != nil || last != "response.completed" {
		t.Fatalf("stream of %s ended with %q, %v", bg.ID, last, err)
	}
	got, err := c.Responses.Get(t.Context(), bg.ID, responses.ResponseGetParams{})
	if err != nil || got.Status != "completed" || got.OutputText() != "echo: in the background" {
		t.Fatalf("poll %s: %s %q %v", bg.ID, got.Status, got.OutputText(), err)
	}
}

// A run that waits for a person completes with the question as its text
// and the request in "agentrt"; the next input with
// previous_response_id answers it.
func TestResponsesApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	asked, err := c.Responses.New(t.Context(), respParams(`call deploy {"env":"prod"}`))
	if err != nil {
		t.Fatal(err)
	}
	if asked.Status != "completed" || asked.OutputText() == "" {
		t.Fatalf("asked: %s %q", asked.Status, asked.OutputText())
	}
	p := respParams("approve")
	p.PreviousResponseID = oa.String(asked.ID)
	answered, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if answered.OutputText() != `echo: "deployed to prod"` {
		t.Errorf("after approval: %s %q", answered.Status, answered.OutputText())
	}
}

// Bad requests and unknown or another tenant's responses are errors in
// OpenAI's shape.
func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, server.Key{Key: "key-a", Tenant: "a"}, server.Key{Key: "key-b", Tenant: "b"})
	a, b := f.client("key-a"), f.client("key-b")
	mine, err := a.Responses.New(t.Context(), respParams("mine"))
	if err != nil {
		t.Fatal(err)
	}
	withInstr := respParams("x")
	withInstr.Instructions = oa.String("be terse")
	prevTheirs := respParams("x")
	prevTheirs.PreviousResponseID = oa.String(mine.ID)
	unknownModel := respParams("x")
	unknownModel.Model = "gpt-4o"
	for _, tc := range []struct {
		name   string
		call   func() error
		status int
		code   string
		param  string
	}{
		{"instructions", func() error { _, err := a.Responses.New(t.Context(), withInstr); return err }, 400, "malformed_request", "instructions"},
		{"unknown model", func() error { _, err := a.Responses.New(t.Context(), unknownModel); return err }, 404, "model_not_found", "model"},
		{"another tenant's response", func() error {
			_, err := b.Responses.Get(t.Context(), mine.ID, responses.ResponseGetParams{})
			return err
		}, 404, "not_found", ""},
		{"another tenant's previous response", func() error { _, err := b.Responses.New(t.Context(), prevTheirs); return err }, 404, "not_found", "previous_response_id"},
		{"not a response id", func() error {
			_, err := a.Responses.Get(t.Context(), "resp_!!", responses.ResponseGetParams{})
			return err
		}, 404, "not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var apiErr *oa.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Code != tc.code || apiErr.Param != tc.param {
				t.Fatalf("got %v; want %d %s param %q", err, tc.status, tc.code, tc.param)
			}
		})
	}
}
