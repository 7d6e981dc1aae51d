package openai_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session"
)

// interruptWhenRunning waits for session id's run to be in its model
// call, interrupts it as a person would, and sends the session input
// from another source, whose turn is its own.
func (f *fixture) interruptWhenRunning(t *testing.T, id string) {
	t.Helper()
	for ev, err := range f.r.Watch(t.Context(), id, 0) {
		if err != nil {
			t.Error(err)
			return
		}
		if ev.Type == session.TypeModelStarted {
			break
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/sessions/" + id + "/interrupt", `{"reason":"a person stopped it"}`},
		{"/v1/sessions/" + id + "/messages", `{"text":"from the desk","source":"desk"}`},
	} {
		resp, err := http.Post(f.http.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("POST %s: %d", c.path, resp.StatusCode)
			return
		}
	}
}

// streamLines posts body to path as a stream and returns its data lines,
// once it has ended, after calling during once the response's headers
// have come.
func (f *fixture) streamLines(t *testing.T, path, body string, during func(*http.Response)) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", f.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	duringDone := make(chan struct{})
	defer func() { <-duringDone }()
	go func() {
		defer close(duringDone)
		during(resp)
	}()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			lines = append(lines, data)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end: %q", lines)
	}
	return lines
}

// A person's interrupt ends the turn a chat completion streams: the
// stream ends saying so, and does not carry the session's next turn —
// another source's input — as its answer (on b63961d it streamed the
// desk's answer as the completion's).
func TestChatStreamEndsAtAPersonsInterrupt(t *testing.T) {
	f := newFixture(t)
	lines := f.streamLines(t, "/v1/chat/completions", `{"model":"assistant","stream":true,"messages":[{"role":"user","content":"hold"}]}`,
		func(resp *http.Response) { f.interruptWhenRunning(t, resp.Header.Get(openai.SessionHeader)) })
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "desk") || !strings.Contains(all, `"interrupted"`) {
		t.Fatalf("the stream: %s\nwant it to end interrupted, without the desk's answer", all)
	}
}

// The same of a streamed response: it ends cancelled, not with the next
// turn's answer.
func TestResponseStreamEndsAtAPersonsInterrupt(t *testing.T) {
	f := newFixture(t)
	lines := f.streamLines(t, "/v1/responses", `{"model":"assistant","stream":true,"input":"hold"}`,
		func(resp *http.Response) { f.interruptWhenRunning(t, resp.Header.Get(openai.SessionHeader)) })
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "desk") || !strings.Contains(lines[len(lines)-1], `"status":"cancelled"`) {
		t.Fatalf("the stream: %s\nwant it to end cancelled, without the desk's answer", all)
	}
}
