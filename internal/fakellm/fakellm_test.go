package fakellm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/fakellm"
)

func post(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// A held request is recorded and waits, its answer unwritten, until it is
// released; the next request is not held.
func TestHoldUntilReleased(t *testing.T) {
	srv := fakellm.Start(t)
	arrived, release := srv.Hold()
	type answer struct {
		body string
		err  error
	}
	held := make(chan answer, 1)
	go func() {
		body, err := post(t.Context(), srv.URL)
		held <- answer{body, err}
	}()
	<-arrived
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests recorded, want the held one", n)
	}
	select {
	case a := <-held:
		t.Fatalf("the held request was answered: %q %v", a.body, a.err)
	default:
	}
	if body, err := post(t.Context(), srv.URL); err != nil || !strings.Contains(body, "You said: hi") {
		t.Fatalf("the next request: %q %v, want it answered at once", body, err)
	}
	release()
	if a := <-held; a.err != nil || !strings.Contains(a.body, "You said: hi") {
		t.Fatalf("the released request: %q %v", a.body, a.err)
	}
}

// A held request whose client goes away ends there, without a release:
// the server closes (Close waits for every handler to return).
func TestHoldEndsWhenTheClientGoesAway(t *testing.T) {
	srv := fakellm.Start(t)
	arrived, _ := srv.Hold()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := post(ctx, srv.URL)
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request: %v, want it canceled", err)
	}
	if body, err := post(t.Context(), srv.URL); err != nil || !strings.Contains(body, "You said: hi") {
		t.Fatalf("a request after: %q %v", body, err)
	}
	srv.Close()
}

// With ToolRounds, a turn is that many calls of "add", one a reply, each
// numbered by the results before it, then a sentence; a new user message
// starts the count again.
func TestToolRounds(t *testing.T) {
	srv := fakellm.StartWith(t, fakellm.Options{ToolRounds: 3, Forget: true})
	type reply struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	msgs := []map[string]any{{"role": "user", "content": "go"}}
	var got []string
	for range 4 {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var r reply
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || len(r.Choices) != 1 {
			t.Fatalf("reply: %v %+v", err, r)
		}
		m := r.Choices[0].Message
		if len(m.ToolCalls) == 0 {
			got = append(got, r.Choices[0].FinishReason+" "+*m.Content)
			break
		}
		c := m.ToolCalls[0]
		got = append(got, r.Choices[0].FinishReason+" "+c.ID+" "+c.Function.Name+" "+c.Function.Arguments)
		msgs = append(msgs, map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}}},
			map[string]any{"role": "tool", "tool_call_id": c.ID, "content": "1"})
	}
	want := []string{
		`tool_calls call_fake1 add {"a":0,"b":1}`,
		`tool_calls call_fake2 add {"a":1,"b":1}`,
		`tool_calls call_fake3 add {"a":2,"b":1}`,
		`stop Done: 3 tools called.`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("Forget kept %d requests", n)
	}
}
