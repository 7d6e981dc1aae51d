package openai_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// runStarted is the first run_started of session id.
func runStarted(t *testing.T, f *fixture, id string) *session.RunStarted {
	t.Helper()
	for ev, err := range f.r.Store().Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(*session.RunStarted); ok {
			return d
		}
	}
	t.Fatalf("session %s has no run_started", id)
	return nil
}

// openai-go's image and file content parts are the turn's media; an
// image in the conversation's history (a new session's import) is not
// kept, and the history says one was there; a message with an image to a
// session that waits for an answer is 409 waiting, and the request still
// waits.
func TestChatCompletionMedia(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...))
	pdf := "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("%PDF-1.7 x"))
	content := []oa.ChatCompletionContentPartUnionParam{
		oa.TextContentPart("what is this?"),
		oa.ImageContentPart(oa.ChatCompletionContentPartImageImageURLParam{URL: png}),
		oa.FileContentPart(oa.ChatCompletionContentPartFileFileParam{FileData: oa.String(pdf), Filename: oa.String("a.pdf")}),
	}
	var resp *http.Response
	got, err := c.Chat.Completions.New(t.Context(), oa.ChatCompletionNewParams{Model: "assistant",
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(content)}}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "echo: what is this?" {
		t.Errorf("answer %q", got.Choices[0].Message.Content)
	}
	media := runStarted(t, f, sessionOf(t, resp)).Media
	if len(media) != 2 || media[0].Type != "image/png" || media[0].Size != 72 || !cmp.Equal(media[1], model.Media{Hash: media[1].Hash, Type: "application/pdf", Name: "a.pdf", Size: 10}) {
		t.Errorf("run_started.media %+v, want the image and the PDF", media)
	}

	// The history's image: a line in the imported history, not a file.
	_, err = c.Chat.Completions.New(t.Context(), oa.ChatCompletionNewParams{Model: "assistant", Messages: []oa.ChatCompletionMessageParamUnion{
		oa.UserMessage(content[:2]), oa.AssistantMessage("a picture"), oa.UserMessage("and now?")}}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	if m := runStarted(t, f, id).Media; len(m) != 0 {
		t.Errorf("a turn after a history with an image has media %+v", m)
	}
	st, err := f.r.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if first := st.Messages[len(st.Messages)-4].Text(); !strings.Contains(first, "what is this?") || !strings.Contains(first, "[an image the client sent here, not kept") {
		t.Errorf("the imported history's user message: %q", first)
	}

	// A session waiting for an approval takes an answer, which is text.
	if _, err = c.Chat.Completions.New(t.Context(), userMsg(`call deploy {"env":"prod"}`), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	id = sessionOf(t, resp)
	_, err = c.Chat.Completions.New(t.Context(), oa.ChatCompletionNewParams{Model: "assistant",
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(content[:2])}}, option.WithHeader("Agentrt-Session", id))
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || apiErr.Code != "waiting" {
		t.Fatalf("files to a waiting session: %v; want 409 waiting", err)
	}
	if ss, err := f.r.Store().GetSession(t.Context(), id); err != nil || ss.Status != session.StatusWaiting {
		t.Errorf("the session after the refusal: %+v %v; want it still waiting", ss, err)
	}
}
