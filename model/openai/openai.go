// Package openai is a client of the OpenAI Chat Completions API, and of
// every server that speaks it: Ollama, vLLM, LM Studio, OpenRouter,
// llama.cpp's server.
//
// It is written for the hot path: a streamed reply is read with one
// buffered reader and a JSON scanner that does not allocate, so the
// allocations of a response do not grow with its length beyond its text
// (see docs/benchmarks.md). The official SDK serves in the tests as an
// oracle: every recorded stream must assemble to what it assembles.
//
//	m, err := openai.New(openai.Config{Model: "gpt-4o-mini", APIKey: os.Getenv("OPENAI_API_KEY")})
//	resp, err := model.Generate(ctx, m, &model.Request{Messages: msgs})
package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentrt/agentrt/internal/llmhttp"
	"github.com/agentrt/agentrt/model"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Model. Zero values mean defaults.
type Config struct {
	// Model is the model's name on the server, e.g. "gpt-4o-mini"; required.
	Model string
	// Name is what events call the model; default Model.
	Name string
	// BaseURL is the API's root, up to and including /v1; default
	// DefaultBaseURL. Ollama's is http://127.0.0.1:11434/v1.
	BaseURL string
	// APIKey is sent as a bearer token when not empty (local servers
	// usually need none).
	APIKey string
	// Organization and Project select an OpenAI organization and project.
	Organization, Project string
	// Headers are added to every request.
	Headers map[string]string
	// Timeouts bound each call; zero fields take model.DefaultTimeouts.
	Timeouts model.Timeouts
	// HTTPClient sends the requests; nil means a client whose timeout
	// suits Timeouts (see model.Timeouts.RequestTimeout).
	HTTPClient *http.Client
	// MaxCompletionTokens sends Request.MaxTokens as max_completion_tokens
	// (which OpenAI's reasoning models require) instead of max_tokens
	// (which OpenAI-compatible servers know). It is on by default for
	// api.openai.com.
	MaxCompletionTokens *bool
	// NoStreamUsage leaves out stream_options.include_usage, for servers
	// that reject it; usage is then unknown for streamed replies.
	NoStreamUsage bool
	// Media are the media types the model takes in a user message (image/*,
	// application/pdf; see model.MatchMedia): images as image_url parts,
	// other files as file parts, both as data URLs. Others are described
	// to it as text. Empty: none.
	Media []string
}

// AcceptsMedia implements model.MediaAcceptor (Config.Media).
func (m *Model) AcceptsMedia(typ string) bool { return model.MatchMedia(m.cfg.Media, typ) }

// Model is an OpenAI-compatible chat model. It is safe for concurrent use.
type Model struct {
	cfg      Config
	name     string
	endpoint string
	call     llmhttp.Call
	maxCT    bool
}

var (
	_ model.Model     = (*Model)(nil)
	_ model.Generator = (*Model)(nil)
)

// New returns a Model for cfg.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: no model name")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q: want http(s)://host[:port]/path", base)
	}
	t := cfg.Timeouts.WithDefaults()
	client := cfg.HTTPClient
	if client == nil {
		client = llmhttp.NewClient(t)
	}
	// The path is joined, the query kept (?api-version=... on Azure).
	ep := *u
	ep.Path = strings.TrimRight(u.Path, "/") + "/chat/completions"
	ep.RawPath = ""
	m := &Model{cfg: cfg, name: cfg.Model, endpoint: ep.String()}
	if cfg.Name != "" {
		m.name = cfg.Name
	}
	m.maxCT = u.Host == "api.openai.com"
	if cfg.MaxCompletionTokens != nil {
		m.maxCT = *cfg.MaxCompletionTokens
	}
	m.call = llmhttp.Call{Client: client, Provider: "openai", Model: cfg.Model, Timeouts: t}
	return m, nil
}

// Name implements model.Model.
func (m *Model) Name() string { return m.name }

// newRequest returns a function building the HTTP request for body.
func (m *Model) newRequest(body []byte, stream bool) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("openai: %w", err)
		}
		h := req.Header
		h["Content-Type"] = []string{"application/json"}
		if stream {
			h["Accept"] = []string{"text/event-stream"}
		} else {
			h["Accept"] = []string{"application/json"}
		}
		if m.cfg.APIKey != "" {
			h["Authorization"] = []string{"Bearer " + m.cfg.APIKey}
		}
		if m.cfg.Organization != "" {
			h.Set("OpenAI-Organization", m.cfg.Organization)
		}
		if m.cfg.Project != "" {
			h.Set("OpenAI-Project", m.cfg.Project)
		}
		for k, v := range m.cfg.Headers {
			h.Set(k, v)
		}
		return req, nil
	}
}

// Stream implements model.Model. The stream's errors are *model.Error
// values (an HTTP error, a watchdog, an error event, a stream cut short),
// or ctx's error. Before the first chunk, a Chunk with Pulse set is
// yielded every Timeouts.FirstFeedback.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		body, err := m.encode(req, true)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		d := decoders.Get().(*decoder)
		defer d.release()
		m.call.StreamChunks(ctx, m.newRequest(body, true), "data: [DONE]", func(ev, data []byte) (model.Chunk, bool, error) {
			if bytes.Equal(data, doneMarker) {
				return model.Chunk{}, true, nil
			}
			c, err := d.chunk(&m.call, ev, data)
			return c.Chunk, false, err
		}, yield)
	}
}

var doneMarker = []byte("[DONE]")
