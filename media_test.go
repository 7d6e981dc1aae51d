package agentrt_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// An image a turn came with reaches a model that takes images as itself
// (the recording server gets its bytes as a data URL), and one that does
// not as a line describing it; what the inspector derives is what the
// server got either way; the log holds the blob's hash, not its bytes.
func TestMediaReachesTheModel(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	for _, tc := range []struct {
		name  string
		media []string
		want  map[string]any // the image's content part
	}{
		{"takes images", []string{"image/*"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}}},
		{"takes none", nil, map[string]any{"type": "text", "text": "[an image: shot.png, image/png, 72 bytes, not shown to this model]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, store, r, blob := mediaRunner(t, tc.media, png)
			ctx := t.Context()
			media := []model.Media{{Hash: blob.Hash, Type: blob.Type, Name: "shot.png", Size: blob.Size}}
			for _, err := range r.Run(ctx, "s", agentrt.Input{Text: "what is this?", Media: media, Agent: "a"}) {
				if err != nil {
					t.Fatal(err)
				}
			}
			got := srv.Requests() // the first: the turn's first call
			if len(got) == 0 {
				t.Fatal("no request")
			}
			msgs := got[0]["messages"].([]any)
			content := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
			if len(content) != 2 || !cmp.Equal(content[0], map[string]any{"type": "text", "text": "what is this?"}) {
				t.Fatalf("the user message's content: %v", content)
			}
			if diff := cmp.Diff(tc.want, content[1]); diff != "" {
				t.Errorf("the image (-want +got):\n%s", diff)
			}
			var seq int64
			for ev, err := range store.Events(ctx, "s", 0) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == session.TypeModelStarted && seq == 0 {
					seq = ev.Seq
				}
				if b, _ := ev.AppendJSON(nil); strings.Contains(string(b), "iVBORw0KGgo") {
					t.Errorf("event %d holds the image's bytes", ev.Seq)
				}
			}
			_, derived := sentBodyOf(t, r, "s", seq)
			if diff := cmp.Diff(got[0], derived); diff != "" {
				t.Errorf("the server got (-) and the log says (+):\n%s", diff)
			}
		})
	}
}

// Media a turn names must be a blob the store keeps, as it was kept.
func TestMediaRefused(t *testing.T) {
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "never"}), registry(t)))
	ctx := context.Background()
	blob, err := store.PutBlob(ctx, []byte("%PDF-1.7"), "application/pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		media model.Media
		want  string
	}{
		{model.Media{Hash: "nope", Type: "image/png", Size: 1}, "64 hex digits"},
		{model.Media{Hash: strings.Repeat("ab", 32), Type: "image/png", Size: 1}, "keeps no blob"},
		{model.Media{Hash: blob.Hash, Type: "image/png", Size: blob.Size}, "is application/pdf of 8 bytes, not image/png"},
	} {
		var got error
		for _, err := range e.r.Run(ctx, "m1", agentrt.Input{Text: "see", Media: []model.Media{tc.media}, Agent: "calc"}) {
			if err != nil {
				got = err
			}
		}
		if agentrt.AsError(got).ErrorCode() != agentrt.CodeBadPart || !strings.Contains(got.Error(), tc.want) {
			t.Errorf("media %+v: %v, want bad_part saying %q", tc.media, got, tc.want)
		}
	}
}

// An image sent without a word (a photo with no caption) is a turn of its
// own: the user message is the image alone. An input with neither text
// nor media is still refused.
func TestMediaWithoutText(t *testing.T) {
	srv, _, r, blob := mediaRunner(t, []string{"image/*"}, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 16)...))
	ctx := t.Context()
	if _, err := r.Send(ctx, "s", agentrt.Input{Agent: "a", Media: []model.Media{{Hash: blob.Hash, Type: blob.Type, Size: blob.Size}}}); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()
	if len(got) == 0 {
		t.Fatal("no request")
	}
	msgs := got[0]["messages"].([]any)
	content, _ := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["type"] != "image_url" {
		t.Errorf("the user message's content: %v", msgs[len(msgs)-1])
	}
	if _, err := r.Send(ctx, "s", agentrt.Input{Agent: "a", Text: "  "}); agentrt.AsError(err).ErrorCode() != agentrt.CodeEmptyInput {
		t.Errorf("an empty input: %v", err)
	}
}

// mediaRunner is a runner whose agent "a" calls a recording OpenAI server
// with a model taking media, and a blob of image (a PNG) in its store.
func mediaRunner(t *testing.T, media []string, image []byte) (*fakellm.Server, *memstore.Store, *agentrt.Runner, session.Blob) {
	t.Helper()
	srv := fakellm.Start(t)
	llm, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: srv.URL + "/v1", APIKey: "k", Media: media})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{{Name: "a", Model: llm}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	blob, err := store.PutBlob(t.Context(), image, "image/png")
	if err != nil {
		t.Fatal(err)
	}
	return srv, store, r, blob
}
