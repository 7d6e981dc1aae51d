package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// Files that come with inputs are kept once as blobs, named by the inputs'
// media parts, and the turn that merges the inputs has them all, in
// order; the same file sent again (its key repeated) is one input.
func TestFilesReachTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Debounce: time.Second})
		stop := e.run(t)
		defer stop()
		png, pdf := []byte("\x89PNG-one"), []byte("%PDF-two")
		ctx := context.Background()
		submit := func(in gateway.Input) {
			t.Helper()
			if _, err := e.g.Submit(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		submit(gateway.Input{Source: "chat", Text: "look", Key: "k1", Files: []gateway.File{{Name: "shot.png", Type: "image/png", Data: png}}})
		submit(gateway.Input{Source: "chat", Text: "look", Key: "k1", Files: []gateway.File{{Name: "shot.png", Type: "image/png", Data: png}}})
		submit(gateway.Input{Source: "chat", Key: "k2", Files: []gateway.File{{Name: "bill.pdf", Type: "application/pdf", Data: pdf}}})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		starts := events[session.RunStarted](t, e.store, "chat")
		if len(starts) != 1 {
			t.Fatalf("%d turns", len(starts))
		}
		want := []model.Media{{Hash: sum(png), Type: "image/png", Name: "shot.png", Size: int64(len(png))},
			{Hash: sum(pdf), Type: "application/pdf", Name: "bill.pdf", Size: int64(len(pdf))}}
		if diff := cmp.Diff(want, starts[0].Media); diff != "" {
			t.Errorf("the turn's media (-want +got):\n%s", diff)
		}
		if len(starts[0].Inputs) != 2 {
			t.Errorf("the turn answers %v, want two inputs", starts[0].Inputs)
		}
		if _, data, err := e.store.GetBlob(session.WithTenant(ctx, session.DefaultTenant), sum(png)); err != nil || string(data) != string(png) {
			t.Errorf("the image's blob: %q %v", data, err)
		}
	})
}

// A file too large, empty or of no media type is refused, nothing kept.
func TestFilesRefused(t *testing.T) {
	e := newEnv(t, gateway.Config{MaxFileBytes: 8, MaxInputFileBytes: 12})
	for _, tc := range []struct {
		files []gateway.File
		code  string
		say   string
	}{
		{[]gateway.File{{Name: "big.png", Type: "image/png", Data: make([]byte, 9)}}, agentrt.CodeInputTooLarge, "holds 9 bytes; at most 8"},
		{[]gateway.File{{Name: "a", Type: "image/png", Data: make([]byte, 8)}, {Name: "b", Type: "image/png", Data: make([]byte, 8)}}, agentrt.CodeInputTooLarge, "more than 12 bytes"},
		{[]gateway.File{{Name: "none.png", Type: "image/png"}}, agentrt.CodeBadPart, "is empty"},
		{[]gateway.File{{Name: "x", Type: "not a type;;", Data: []byte("x")}}, agentrt.CodeBadPart, "blob type"},
	} {
		_, err := e.g.Submit(context.Background(), gateway.Input{Source: "chat", Files: tc.files})
		if agentrt.AsError(err).ErrorCode() != tc.code || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%v: %v, want %s saying %q", tc.files[0].Name, err, tc.code, tc.say)
		}
	}
	bad := gateway.Input{Source: "chat", Parts: []session.InputPart{{Type: "media", Data: []byte(`{"hash":"nope"}`)}}}
	if _, err := e.g.Submit(context.Background(), bad); agentrt.AsError(err).ErrorCode() != agentrt.CodeBadPart {
		t.Errorf("a media part naming no blob: %v", err)
	}
}
