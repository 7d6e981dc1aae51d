package fakellm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

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
