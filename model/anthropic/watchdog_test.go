package anthropic_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/modeltest"
)

// step is part of a scripted response body: data written after a pause.
type step struct {
	after time.Duration
	data  string
}

// pipeTransport answers every request at once with a 200 event stream
// whose body a goroutine writes from the script, pausing in between (in
// a synctest bubble the pauses cost no real time). After the script the
// body ends if end is set, else it hangs until the request's context
// ends, which closes it, as a real transport does.
type pipeTransport struct {
	script []step
	end    bool
}

func (p pipeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	ctx := req.Context()
	pr, pw := io.Pipe()
	go func() {
		<-ctx.Done()
		_ = pr.CloseWithError(ctx.Err())
	}()
	go func() {
		for _, s := range p.script {
			select {
			case <-time.After(s.after):
			case <-ctx.Done():
				return
			}
			if _, err := pw.Write([]byte(s.data)); err != nil {
				return
			}
		}
		if !p.end {
			<-ctx.Done()
		}
		_ = pw.Close()
	}()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// seen is one value the stream yielded, and when.
type seen struct {
	at    time.Duration
	pulse bool
	text  string
	err   error
}

// watch streams a reply from the script under the timeouts, in the
// current bubble, and returns what was yielded.
func watch(t *testing.T, to model.Timeouts, tr pipeTransport) []seen {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{Model: "claude-test", Timeouts: to, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var out []seen
	for c, err := range m.Stream(context.Background(), modeltest.Request()) {
		out = append(out, seen{at: time.Since(start), pulse: c.Pulse, text: c.Text, err: err})
	}
	return out
}

const (
	evStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	evStop = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func evText(s string) string {
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + s + "\"}}\n\n"
}

// lastErr returns the final value's error, as a *model.Error.
func lastErr(t *testing.T, out []seen) (*model.Error, time.Duration) {
	t.Helper()
	if len(out) == 0 || out[len(out)-1].err == nil {
		t.Fatalf("the stream ended without an error: %+v", out)
	}
	last := out[len(out)-1]
	me, ok := model.AsError(last.err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *model.Error", last.err, last.err)
	}
	return me, last.at
}

func TestWatchdogs(t *testing.T) {
	t.Parallel()
	s := time.Second

	t.Run("pulses before the first event", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			to := model.Timeouts{FirstFeedback: s, FirstChunk: 10 * s, Idle: 10 * s, Hard: time.Minute}
			out := watch(t, to, pipeTransport{end: true, script: []step{{2500 * time.Millisecond, evStart + evText("Hi") + evStop}}})
			want := []seen{{at: s, pulse: true}, {at: 2 * s, pulse: true}, {at: 2500 * time.Millisecond, text: "Hi"}, {at: 2500 * time.Millisecond}}
			if len(out) != len(want) {
				t.Fatalf("yielded %+v, want %+v", out, want)
			}
			for i := range want {
				// The last value is the usage and finish chunk.
				if out[i].at != want[i].at || out[i].pulse != want[i].pulse || out[i].text != want[i].text || out[i].err != nil {
					t.Errorf("value %d: %+v, want %+v", i, out[i], want[i])
				}
			}
		})
	})

	t.Run("no first chunk", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			to := model.Timeouts{FirstFeedback: s, FirstChunk: 3500 * time.Millisecond, Idle: 10 * s, Hard: time.Minute}
			out := watch(t, to, pipeTransport{})
			me, at := lastErr(t, out)
			if me.Code != model.CodeTimeout || me.Streamed || !strings.Contains(me.Message, "first-chunk") {
				t.Errorf("error %v (streamed %v), want a first-chunk timeout", me, me.Streamed)
			}
			if at != 3500*time.Millisecond {
				t.Errorf("failed after %v, want 3.5s", at)
			}
			if pulses := len(out) - 1; pulses != 3 {
				t.Errorf("%d pulses before the timeout, want 3: %+v", pulses, out)
			}
		})
	})

	t.Run("stall between chunks", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			to := model.Timeouts{FirstFeedback: s, FirstChunk: 10 * s, Idle: 2 * s, Hard: time.Minute}
			out := watch(t, to, pipeTransport{script: []step{{0, evStart + evText("Hel")}, {s, evText("lo")}}})
			me, at := lastErr(t, out)
			if me.Code != model.CodeTimeout || !me.Streamed || !strings.Contains(me.Message, "idle") {
				t.Errorf("error %v (streamed %v), want an idle timeout after streaming", me, me.Streamed)
			}
			if at != 3*s {
				t.Errorf("failed after %v, want 3s (the last event at 1s + 2s idle)", at)
			}
			var text string
			for _, v := range out {
				text += v.text
			}
			if text != "Hello" {
				t.Errorf("text %q before the stall, want Hello", text)
			}
		})
	})

	t.Run("hard limit", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			to := model.Timeouts{FirstFeedback: s, FirstChunk: 10 * s, Idle: 2 * s, Hard: 5 * s}
			script := []step{{0, evStart}}
			for range 100 {
				script = append(script, step{700 * time.Millisecond, evText("a")})
			}
			out := watch(t, to, pipeTransport{script: script})
			me, at := lastErr(t, out)
			if me.Code != model.CodeTimeout || !me.Streamed || !strings.Contains(me.Message, "hard limit") {
				t.Errorf("error %v (streamed %v), want the hard limit", me, me.Streamed)
			}
			if at != 5*s {
				t.Errorf("failed after %v, want 5s", at)
			}
			if n := len(out) - 1; n != 7 {
				t.Errorf("%d chunks before the limit, want 7 (one every 0.7s)", n)
			}
		})
	})
}
