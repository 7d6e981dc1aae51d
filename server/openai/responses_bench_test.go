package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkResponsesStream: one client, sequential turns, each in a new
// session, the echo model taking no time, streamed through chat
// completions (protocol=chat) or the Responses API (protocol=responses)
// and read to the end over plain net/http: ns/op is a turn's latency,
// from the request to the stream's last byte. The Responses stream sends
// more events a turn (the message's events around the token deltas);
// the ratio to chat is its cost (docs/benchmarks.md).
func BenchmarkResponsesStream(b *testing.B) {
	for _, name := range []string{"chat", "responses"} {
		b.Run("protocol="+name, func(b *testing.B) {
			f := newFixture(b)
			path, body, end := "/v1/chat/completions",
				`{"model":"writer","stream":true,"messages":[{"role":"user","content":"hello there"}]}`, "data: [DONE]"
			if name == "responses" {
				path, body, end = "/v1/responses", `{"model":"writer","stream":true,"input":"hello there"}`, "event: response.completed"
			}
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := streamTurn(ctx, c, f.http.URL+path, body, end); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// streamTurn posts body to url and reads the stream to its end, which
// must hold end and the turn's text in its tokens.
func streamTurn(ctx context.Context, c *http.Client, url, body, end string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(end)) || !bytes.Contains(b, []byte(`there"`)) {
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, b)
	}
	return nil
}
