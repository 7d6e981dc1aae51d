package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
)

// mediaRequest is a user message with text, an image and a PDF the model
// takes (their bytes loaded), and an audio file it does not (described).
func mediaRequest() *model.Request {
	return &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{
		{Type: model.PartText, Text: "what is in these?"},
		{Type: model.PartImage, Media: &model.Media{Hash: "h1", Type: "image/png", Name: "shot.png", Size: 4, Data: []byte("\x89PNG")}},
		{Type: model.PartFile, Media: &model.Media{Hash: "h2", Type: "application/pdf", Name: "bill.pdf", Size: 5, Data: []byte("%PDF-")}},
		{Type: model.PartFile, Media: &model.Media{Hash: "h3", Type: "audio/ogg", Name: "note.ogg", Size: 2048}},
	}}}}
}

// Media goes as the Chat Completions API takes it
// (https://platform.openai.com/docs/api-reference/chat/create: content
// parts of type text, image_url and file), as data URLs; media the model
// does not take is described.
func TestEncodeMedia(t *testing.T) {
	m, err := openai.New(openai.Config{Model: "gpt-4o", APIKey: "k", Media: []string{"image/*", "application/pdf"}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.AcceptsMedia("image/jpeg") || !m.AcceptsMedia("application/pdf") || m.AcceptsMedia("audio/ogg") {
		t.Error("AcceptsMedia does not follow Config.Media")
	}
	body, err := m.EncodeRequest(mediaRequest(), false)
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
		{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw=="}},
		{"type": "file", "file": map[string]any{"filename": "bill.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
		{"type": "text", "text": "[a file: note.ogg, audio/ogg, 2.0 KB, not shown to this model]"},
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" {
		t.Fatalf("messages: %s", body)
	}
	if diff := cmp.Diff(want, got.Messages[0].Content); diff != "" {
		t.Errorf("the content (-want +got):\n%s", diff)
	}
}
