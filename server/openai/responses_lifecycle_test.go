package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// apiErrorIs reports whether err is openai-go's error with status and code.
func apiErrorIs(err error, status int, code string) bool {
	var e *oa.Error
	return errors.As(err, &e) && e.StatusCode == status && e.Code == code
}

// follow reads response id's stream until an event of type typ, and
// returns the response it carries.
func follow(t *testing.T, c *oa.Client, id, typ string) responses.Response {
	t.Helper()
	st := c.Responses.GetStreaming(t.Context(), id, responses.ResponseGetParams{})
	defer st.Close()
	for st.Next() {
		if ev := st.Current(); ev.Type == typ {
			return ev.Response
		}
	}
	t.Fatalf("the stream of %s ended without %s: %v", id, typ, st.Err())
	return responses.Response{}
}

// Cancel stops a background response's run: the response, its poll and
// its stream say cancelled; cancelling it again answers the same; a
// response that completed cannot be cancelled.
func TestResponsesCancel(t *testing.T) {
	t.Parallel()
	f, g := newGated(t)
	c := f.client("")
	p := respParams("count")
	p.Model, p.Background = "slow", oa.Bool(true)
	bg, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	// The model waits for a release that never comes: only the cancel
	// ends the run (and the cancel waits for the run to start).
	cancelled, err := c.Responses.Cancel(t.Context(), bg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status != "cancelled" || !cancelled.Background || cancelled.ID != bg.ID || cancelled.JSON.Error.Raw() != "null" {
		t.Fatalf("cancel: %s background=%v id %s error %s", cancelled.Status, cancelled.Background, cancelled.ID, cancelled.JSON.Error.Raw())
	}
	polled, err := c.Responses.Get(t.Context(), bg.ID, responses.ResponseGetParams{})
	if err != nil || polled.Status != "cancelled" {
		t.Fatalf("poll after the cancel: %v %v", polled, err)
	}
	last := ""
	st := c.Responses.GetStreaming(t.Context(), bg.ID, responses.ResponseGetParams{})
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.failed" {
			last = string(ev.Response.Status)
		}
	}
	if err := st.Err(); err != nil || last != "cancelled" {
		t.Fatalf("the stream ended %q, %v; want response.failed with status cancelled", last, err)
	}
	if again, err := c.Responses.Cancel(t.Context(), bg.ID); err != nil || again.Status != "cancelled" {
		t.Fatalf("cancel again: %v %v", again, err)
	}
	// The session goes on: the next input is a new turn, which completes.
	next := respParams("again")
	next.PreviousResponseID, next.Model, next.Background = oa.String(bg.ID), "slow", oa.Bool(true)
	second, err := c.Responses.New(t.Context(), next)
	if err != nil {
		t.Fatal(err)
	}
	g.release <- struct{}{} // the model's one reply
	if got := follow(t, c, second.ID, "response.completed"); got.Status != "completed" || got.OutputText() != "one two three" {
		t.Fatalf("the turn after the cancel: %s %q", got.Status, got.OutputText())
	}
	// A completed response cannot be cancelled, and cancelling it does not
	// touch the session's next turn, which runs.
	next.PreviousResponseID = oa.String(second.ID)
	third, err := c.Responses.New(t.Context(), next)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, c, third.ID, "response.in_progress")
	if _, err := c.Responses.Cancel(t.Context(), second.ID); !apiErrorIs(err, http.StatusConflict, "not_running") {
		t.Fatalf("cancel of a completed response: %v; want 409 not_running", err)
	}
	if got, err := c.Responses.Get(t.Context(), third.ID, responses.ResponseGetParams{}); err != nil || got.Status != "in_progress" {
		t.Fatalf("the next turn after the refused cancel: %v %v", got, err)
	}
	if got, err := c.Responses.Cancel(t.Context(), third.ID); err != nil || got.Status != "cancelled" {
		t.Fatalf("cancel of the next turn: %v %v", got, err)
	}
	if _, err := c.Responses.Cancel(t.Context(), "resp_nothing"); !apiErrorIs(err, http.StatusNotFound, "not_found") {
		t.Fatalf("cancel of an unknown response: %v; want 404 not_found", err)
	}
}

// A response is deleted with its session when it is the session's only
// turn; one that shares its session with other turns is not deleted, and
// neither is one whose run goes on.
func TestResponsesDelete(t *testing.T) {
	t.Parallel()
	f, _ := newGated(t)
	c := f.client("")
	lone, err := c.Responses.New(t.Context(), respParams("forget me"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Responses.Delete(t.Context(), lone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(t.Context(), lone.ID, responses.ResponseGetParams{}); !apiErrorIs(err, http.StatusNotFound, "not_found") {
		t.Fatalf("get after the delete: %v; want 404", err)
	}
	if err := c.Responses.Delete(t.Context(), lone.ID); !apiErrorIs(err, http.StatusNotFound, "not_found") {
		t.Fatalf("delete again: %v; want 404", err)
	}

	// The body of the answer, as OpenAI's API gives it.
	one, err := c.Responses.New(t.Context(), respParams("me too"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, f.http.URL+"/v1/responses/"+one.ID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || body["id"] != one.ID || body["object"] != "response.deleted" || body["deleted"] != true {
		t.Fatalf("DELETE: %d %v %v", resp.StatusCode, body, err)
	}

	// Two turns of one session, and a run that waited for a person and
	// was answered.
	first, err := c.Responses.New(t.Context(), respParams("one"))
	if err != nil {
		t.Fatal(err)
	}
	p := respParams("two")
	p.PreviousResponseID = oa.String(first.ID)
	second, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	asked, err := c.Responses.New(t.Context(), respParams(`call deploy {"env":"prod"}`))
	if err != nil {
		t.Fatal(err)
	}
	p = respParams("approve")
	p.PreviousResponseID = oa.String(asked.ID)
	approved, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*responses.Response{first, second, asked, approved} {
		if err := c.Responses.Delete(t.Context(), r.ID); !apiErrorIs(err, http.StatusConflict, "not_deletable") {
			t.Errorf("delete %q: %v; want 409 not_deletable", r.OutputText(), err)
		}
		if got, err := c.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{}); err != nil || got.OutputText() != r.OutputText() {
			t.Errorf("after the refused delete: %v %v", got, err)
		}
	}

	// A run in progress is not deleted under itself.
	p = respParams("count")
	p.Model, p.Background = "slow", oa.Bool(true)
	running, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Responses.GetStreaming(t.Context(), running.ID, responses.ResponseGetParams{})
	for st.Next() && st.Current().Type != "response.in_progress" {
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Responses.Delete(t.Context(), running.ID); !apiErrorIs(err, http.StatusConflict, "busy") {
		t.Fatalf("delete of a running response: %v; want 409 busy", err)
	}
}

// A response read again says what it was created with: background,
// previous_response_id (of a turn that answered a waiting run too),
// model; instructions are null.
func TestResponsesGetEchoes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	p := respParams(`call deploy {"env":"prod"}`)
	p.Background = oa.Bool(true)
	asked, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Responses.GetStreaming(t.Context(), asked.ID, responses.ResponseGetParams{})
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	p = respParams("approve")
	p.PreviousResponseID = oa.String(asked.ID)
	approved, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	p = respParams("thanks")
	p.PreviousResponseID = oa.String(approved.ID)
	thanks, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, prev   string
		background bool
	}{
		{asked.ID, "", true},
		{approved.ID, asked.ID, false},
		{thanks.ID, approved.ID, false},
	} {
		got, err := c.Responses.Get(t.Context(), tc.id, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != tc.id || got.PreviousResponseID != tc.prev || got.Background != tc.background || got.Model != "assistant" ||
			got.Status != "completed" || got.JSON.Instructions.Raw() != "null" {
			t.Errorf("get %s: id %s previous %q background %v model %s status %s instructions %s; want previous %q background %v",
				tc.id, got.ID, got.PreviousResponseID, got.Background, got.Model, got.Status, got.JSON.Instructions.Raw(), tc.prev, tc.background)
		}
	}
}
