package a2a_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server/a2a"
)

// An A2A stream that has nothing to say for a while (the turn waits on a
// tool) gets SSE keep-alive comments, so that proxies keep it open.
func TestStreamKeepAlive(t *testing.T) {
	f := newFixture(t, options{cfg: a2a.Config{KeepAlive: time.Millisecond}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", f.http.URL+"/v1/a2a/assistant", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"call gate {}"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-f.started // the turn waits on the gate: the stream is idle
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": keep-alive" {
			close(f.release)
			return
		}
	}
	t.Fatalf("the stream ended without a keep-alive comment: %v", sc.Err())
}

// The card of no agent, where @a2a-js/sdk's createFromUrl looks for it
// when given an agent's URL without its trailing slash, is a 404 saying
// where the cards are.
func TestCardWithoutAgent(t *testing.T) {
	f := newFixture(t, options{})
	resp, err := http.Get(f.http.URL + "/v1/a2a/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(b.String(), "/v1/a2a/assistant/.well-known/agent-card.json") ||
		!strings.Contains(b.String(), "trailing slash") {
		t.Errorf("GET /v1/a2a/.well-known/agent-card.json: %d %s; want a 404 naming the agents' cards", resp.StatusCode, b.String())
	}
}
