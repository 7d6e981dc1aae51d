// Package modeltest is the conformance suite every model provider passes.
//
// It replays wire bytes — real recordings from the providers' SDK test
// suites, and files written by hand for the failure modes real traffic has
// (their names start with "synthetic-") — through a local HTTP server, and
// checks what the provider's client assembles from them:
//
//	func TestConformance(t *testing.T) {
//		modeltest.Run(t, modeltest.OpenAI, func(t *testing.T, baseURL string) model.Model {
//			m, err := openai.New(openai.Config{BaseURL: baseURL, Model: "gpt-4o", APIKey: "test"})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return m
//		})
//	}
package modeltest

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/google/go-cmp/cmp"
)

//go:embed testdata
var files embed.FS

// Files returns the transcripts, at the root of the file system.
func Files() fs.FS {
	sub, err := fs.Sub(files, "testdata")
	if err != nil {
		panic(err) // the embedded directory exists
	}
	return sub
}

// Format is a provider's wire format.
type Format string

// Wire formats.
const (
	OpenAI    Format = "openai"    // Chat Completions
	Anthropic Format = "anthropic" // Messages
)

// Case is one exchange and what a client must make of it.
type Case struct {
	Name   string
	Format Format
	// File holds the response: an event stream (.sse), a JSON body
	// (.json), or, for a file named "*-error-*.json", an object
	// {status, headers, body} describing a whole HTTP response.
	File string
	// Data, when not nil, is served instead of File's contents (File
	// still names the kind of response); for bodies too big to keep.
	Data []byte
	// Generate asks without streaming (model.Generator); else Stream.
	Generate bool
	// Want is the assembled reply, when the exchange succeeds.
	Want *model.Response
	// WantErr is the code of the *model.Error the exchange must fail
	// with, and WantRecoverable its verdict.
	WantErr         model.ErrorCode
	WantRecoverable bool
	// WantRetryAfter is the error's RetryAfter.
	WantRetryAfter time.Duration
	// WantErrText is a phrase the error's text must hold.
	WantErrText string
}

// NewModel returns the model under test, talking to the server at
// baseURL (which ends in /v1).
type NewModel func(t *testing.T, baseURL string) model.Model

// Run checks newModel against every case of format f, and the behaviours
// every client must have (cancellation, a consumer that stops early).
func Run(t *testing.T, f Format, newModel NewModel) {
	t.Helper()
	for _, c := range Cases(f) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			RunCase(t, c, newModel)
		})
	}
	t.Run("cancel-mid-stream", func(t *testing.T) { t.Parallel(); testCancel(t, f, newModel) })
	t.Run("consumer-stops", func(t *testing.T) { t.Parallel(); testStop(t, f, newModel) })
}

// RunCase checks one case.
func RunCase(t *testing.T, c Case, newModel NewModel) {
	t.Helper()
	srv := Serve(t, c)
	m := newModel(t, srv.URL+"/v1")
	req := Request()
	var (
		resp *model.Response
		err  error
	)
	if c.Generate {
		g, ok := m.(model.Generator)
		if !ok {
			t.Fatalf("%T does not implement model.Generator", m)
		}
		resp, err = g.Generate(context.Background(), req)
	} else {
		resp, err = Collect(m.Stream(context.Background(), req))
	}
	if c.WantErr != "" {
		if err == nil {
			t.Fatalf("got reply %+v, want a %s error", resp, c.WantErr)
		}
		var me *model.Error
		if !errors.As(err, &me) {
			t.Fatalf("error %v (%T) is not a *model.Error", err, err)
		}
		if me.Code != c.WantErr || me.Recoverable() != c.WantRecoverable {
			t.Errorf("error %q: code %s recoverable %v, want %s %v", err, me.Code, me.Recoverable(), c.WantErr, c.WantRecoverable)
		}
		if me.RetryAfter != c.WantRetryAfter {
			t.Errorf("RetryAfter %v, want %v", me.RetryAfter, c.WantRetryAfter)
		}
		if c.WantErrText != "" && !strings.Contains(err.Error(), c.WantErrText) {
			t.Errorf("error %q does not say %q", err, c.WantErrText)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.Want, resp); diff != "" {
		t.Errorf("assembled reply (-want +got):\n%s", diff)
	}
}

// Collect assembles a stream into a response, checking the stream's
// contract on the way: nothing follows an error, and pulses carry
// nothing else.
func Collect(seq func(func(model.Chunk, error) bool)) (*model.Response, error) {
	var a model.Assembler
	var failed error
	for c, err := range seq {
		if failed != nil {
			return nil, errors.New("modeltest: the stream went on after an error")
		}
		if err != nil {
			failed = err
			continue
		}
		if c.Pulse && (c.Text != "" || len(c.ToolCalls) > 0 || c.Usage != nil || c.FinishReason != "") {
			return nil, errors.New("modeltest: a pulse chunk carries content")
		}
		a.Add(c)
	}
	if failed != nil {
		return nil, failed
	}
	return a.Response()
}

// Request is the request every case sends: a system prompt, a short
// history with a tool call and its result, and two tools.
func Request() *model.Request {
	temp := 0.0
	return &model.Request{
		System: "You are terse.",
		Messages: []model.Message{
			model.TextMessage(model.RoleUser, "What's the weather in Paris?"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			{Role: model.RoleTool, ToolCallID: "call_1", Name: "get_weather", Parts: []model.Part{{Type: model.PartText, Text: `{"temp_c":21}`}}},
			model.TextMessage(model.RoleUser, "And in New York?"),
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Current weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_stock_price", InputSchema: json.RawMessage(`{"type":"object","properties":{"ticker":{"type":"string"}}}`)},
		},
		MaxTokens:   256,
		Temperature: &temp,
	}
}

// Serve starts a local server that answers every request with c's file,
// flushing an event stream event by event as a provider does. It checks
// that requests are POSTs with a JSON body.
func Serve(t testing.TB, c Case) *httptest.Server {
	t.Helper()
	data := c.Data
	if data == nil {
		var err error
		if data, err = fs.ReadFile(Files(), c.File); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(r.Body)
		if r.Method != http.MethodPost || !json.Valid(body.Bytes()) {
			http.Error(w, "modeltest: want a POST with a JSON body", http.StatusBadRequest)
			t.Errorf("request %s %s with body %.200q", r.Method, r.URL, body.Bytes())
			return
		}
		WriteResponse(w, c.File, data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// WriteResponse writes a transcript file as an HTTP response.
func WriteResponse(w http.ResponseWriter, name string, data []byte) {
	switch {
	case strings.HasSuffix(name, ".sse"):
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		flusher, _ := w.(http.Flusher)
		for len(data) > 0 {
			n := bytes.Index(data, []byte("\n\n"))
			if n < 0 {
				n = len(data)
			} else {
				n += 2
			}
			_, _ = w.Write(data[:n])
			if flusher != nil {
				flusher.Flush()
			}
			data = data[n:]
		}
	case strings.Contains(name, "-error-"):
		var v struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    json.RawMessage   `json:"body"`
			Text    string            `json:"text"` // a body that is not JSON
		}
		if err := json.Unmarshal(data, &v); err != nil {
			http.Error(w, "modeltest: bad error file "+name+": "+err.Error(), http.StatusTeapot)
			return
		}
		for k, val := range v.Headers {
			w.Header().Set(k, val)
		}
		w.WriteHeader(v.Status)
		if v.Text != "" {
			_, _ = w.Write([]byte(v.Text))
		} else {
			_, _ = w.Write(v.Body)
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}
}
