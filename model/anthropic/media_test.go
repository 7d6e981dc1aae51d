package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
)

// Media goes as the Messages API takes it
// (https://docs.anthropic.com/en/api/messages: image and document blocks
// with a base64 source); media the model does not take is described.
func TestEncodeMedia(t *testing.T) {
	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "k", Media: []string{"image/*", "application/pdf"}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{
		{Type: model.PartText, Text: "what is in these?"},
		{Type: model.PartImage, Media: &model.Media{Hash: "h1", Type: "image/png", Name: "shot.png", Size: 4, Data: []byte("\x89PNG")}},
		{Type: model.PartFile, Media: &model.Media{Hash: "h2", Type: "application/pdf", Name: "bill.pdf", Size: 5, Data: []byte("%PDF-")}},
		{Type: model.PartFile, Media: &model.Media{Hash: "h3", Type: "audio/ogg", Name: "note.ogg", Size: 2048}},
	}}}}
	body, err := m.EncodeRequest(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []map[string]any
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	want := []map[string]any{
		{"type": "text", "text": "what is in these?"},
		{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
		{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
		{"type": "text", "text": "[a file: note.ogg, audio/ogg, 2.0 KB, not shown to this model]"},
	}
	if len(got.Messages) != 1 {
		t.Fatalf("messages: %s", body)
	}
	if diff := cmp.Diff(want, got.Messages[0].Content); diff != "" {
		t.Errorf("the content (-want +got):\n%s", diff)
	}
}
