package mcp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/session"
)

// callReturned is a server middleware that says on ch when a tools/call
// handler has returned.
func callReturned(ch chan<- struct{}) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/call" {
				ch <- struct{}{}
			}
			return res, err
		}
	}
}

// A client that goes away in the middle of a call never stops the run:
// the call's handler ends (when the SDK tells it the client is gone), the
// run goes on to its end, and the REST API finds it done. Gone: the
// client cancels the call (notifications/cancelled), exits (its end of
// stdio closes), or drops the HTTP connection of a tools/call.
func TestClientGoneRunGoesOn(t *testing.T) {
	for _, gone := range []string{"call canceled", "client exited"} {
		t.Run(gone, func(t *testing.T) {
			f := newFixture(t)
			returned := make(chan struct{}, 1)
			cs, pipe := f.stdio(t, "", nil, callReturned(returned))
			id := f.newSession(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan called, 1)
			go callAsync(ctx, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "block", "session": id}}, done)
			f.waitEntered(t, done)
			if gone == "call canceled" {
				cancel()
			} else {
				_ = pipe.Close()
			}
			if c := <-done; c.err == nil {
				t.Errorf("the call went on after its client left: %q", text(c.res))
			}
			<-returned
			// The handler is gone; the run still waits on its model.
			if st, err := f.r.Load(tenantCtx(t, "ta"), id); err != nil || st.Status != session.StatusRunning {
				t.Fatalf("session %s after its caller left: %v, %v; want running", id, st.Status, err)
			}
			close(f.model.gate)
			f.checkDone(t, id)
		})
	}
	t.Run("HTTP connection dropped", func(t *testing.T) {
		f := newFixture(t)
		sid := f.connect(t, "key-a", "2025-11-25", nil).ID()
		id := f.newSession(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, "POST", f.http.URL+mcp.Path, strings.NewReader(fmt.Sprintf(
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"assistant","arguments":{"message":"block","session":%q}}}`, id)))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"Authorization": "Bearer key-a", "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"} {
			req.Header.Set(k, v)
		}
		dropped := make(chan error, 1)
		go func() {
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			dropped <- err
		}()
		<-f.model.entered
		cancel()
		if err := <-dropped; err == nil {
			t.Error("the tools/call stream ended without its connection dropped")
		}
		close(f.model.gate)
		f.checkDone(t, id)
	})
}

// checkDone checks that the run of session id finishes done, and that the
// REST API has the session done with the model's answer.
func (f *fixture) checkDone(t *testing.T, id string) {
	t.Helper()
	if d := f.finished(t, id); d.Status != session.StatusDone {
		t.Fatalf("session %s's run finished %s: want done", id, d.Status)
	}
	var info server.SessionInfo
	if code := f.rest(t, "GET", "/v1/sessions/"+id, "", &info); code != http.StatusOK || info.Status != session.StatusDone {
		t.Errorf("GET /v1/sessions/%s: %d %+v; want it done", id, code, info)
	}
	var page struct {
		Events []struct {
			Type string `json:"type"`
			Data struct {
				Text string `json:"text"`
			} `json:"data"`
		} `json:"events"`
	}
	f.rest(t, "GET", "/v1/sessions/"+id+"/events", "", &page)
	answered := false
	for _, ev := range page.Events {
		answered = answered || ev.Type == string(session.TypeFinal) && ev.Data.Text == "echo: block"
	}
	if !answered {
		t.Errorf("GET /v1/sessions/%s/events: %+v; want the answer", id, page.Events)
	}
}
