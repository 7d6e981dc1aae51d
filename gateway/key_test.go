package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
)

// An idempotency key is stored with its input and in the inbox's unique
// index: one longer than MaxKeyBytes is refused before anything is
// stored, on every transport, since they all submit through here.
func TestSubmitKeyLength(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	ctx := context.Background()
	if _, err := e.g.Submit(ctx, gateway.Input{Source: "s", Text: "hi", Key: strings.Repeat("k", gateway.MaxKeyBytes)}); err != nil {
		t.Fatalf("a key of %d bytes: %v", gateway.MaxKeyBytes, err)
	}
	for _, n := range []int{gateway.MaxKeyBytes + 1, 500_000} {
		_, err := e.g.Submit(ctx, gateway.Input{Source: "t", Text: "hi", Key: strings.Repeat("k", n)})
		if code := agentrt.AsError(err).ErrorCode(); code != agentrt.CodeBadIdempotencyKey {
			t.Errorf("a key of %d bytes: %v (code %q), want %s", n, err, code, agentrt.CodeBadIdempotencyKey)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("the refusal repeats the key: %d bytes", len(err.Error()))
		}
	}
	p, err := e.g.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range p {
		if in.Source == "t" {
			t.Errorf("an input with a key too long was stored: %+v", in)
		}
	}
}
