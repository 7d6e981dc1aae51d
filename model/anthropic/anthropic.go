// Package anthropic is a client of the Anthropic Messages API.
//
// Like model/openai it is written for the hot path: a streamed reply is
// read with one buffered reader and a JSON scanner that does not allocate,
// so the allocations of a response do not grow with its length beyond its
// text. The official SDK serves in the tests as an oracle: every recorded
// stream must assemble to what it assembles.
//
//	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: os.Getenv("ANTHROPIC_API_KEY")})
//	resp, err := model.Generate(ctx, m, &model.Request{Messages: msgs})
//
// How agentrt's requests map onto the API:
//
//   - Request.System and every system message are joined (by a blank line)
//     into the system parameter, the only place the API takes them.
//   - Messages become alternating user and assistant turns of content
//     blocks: consecutive messages of one side are merged into one turn,
//     so that the tool results answering one assistant message, and the
//     user message after them, make a single user turn.
//   - A tool call whose arguments are not a JSON object (cut off by
//     max_tokens, say) is sent with the input {}: the API takes nothing
//     else, and the tool result next to it says what went wrong.
//   - ResponseFormat json_schema is sent as output_config.format (structured
//     outputs; models without them answer with a 400). json_object has no
//     equivalent and is an error.
//
// Usage follows agentrt's meaning: InputTokens counts all the input,
// cached or not (input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens), CachedTokens the part read from the cache.
package anthropic

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

// Defaults.
const (
	// DefaultBaseURL is Anthropic's API.
	DefaultBaseURL = "https://api.anthropic.com/v1"
	// DefaultVersion is the anthropic-version header sent.
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is max_tokens when neither the Request nor the
	// Config says: the API requires one.
	DefaultMaxTokens = 4096
)

// Config configures a Model. Zero values mean defaults.
type Config struct {
	// Model is the model's name, e.g. "claude-sonnet-4-5"; required.
	Model string
	// Name is what events call the model; default Model.
	Name string
	// BaseURL is the API's root, up to and including /v1; default
	// DefaultBaseURL. Requests go to BaseURL + "/messages".
	BaseURL string
	// APIKey is sent as the x-api-key header when not empty.
	APIKey string
	// Version is the anthropic-version header; default DefaultVersion.
	Version string
	// Headers are added to every request (anthropic-beta, say).
	Headers map[string]string
	// Timeouts bound each call; zero fields take model.DefaultTimeouts.
	Timeouts model.Timeouts
	// HTTPClient sends the requests; nil means a client whose timeout
	// suits Timeouts (see model.Timeouts.RequestTimeout).
	HTTPClient *http.Client
	// DefaultMaxTokens is max_tokens for requests that set none; default
	// DefaultMaxTokens.
	DefaultMaxTokens int
	// Media are the media types the model takes in a user message (image/*,
	// application/pdf; see model.MatchMedia): images as image blocks, PDFs
	// (and other files) as document blocks, base64. Others are described
	// to it as text. Empty: none.
	Media []string
}

// AcceptsMedia implements model.MediaAcceptor (Config.Media).
func (m *Model) AcceptsMedia(typ string) bool { return model.MatchMedia(m.cfg.Media, typ) }

// Model is a Claude model. It is safe for concurrent use.
type Model struct {
	cfg       Config
	name      string
	endpoint  string
	version   string
	maxTokens int
	call      llmhttp.Call
}

var (
	_ model.Model     = (*Model)(nil)
	_ model.Generator = (*Model)(nil)
)

// New returns a Model for cfg.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic: no model name")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q: want http(s)://host[:port]/path", base)
	}
	if cfg.DefaultMaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: DefaultMaxTokens %d is negative", cfg.DefaultMaxTokens)
	}
	t := cfg.Timeouts.WithDefaults()
	client := cfg.HTTPClient
	if client == nil {
		client = llmhttp.NewClient(t)
	}
	// The path is joined, a query kept (as the OpenAI client does).
	ep := *u
	ep.Path, ep.RawPath = strings.TrimRight(u.Path, "/")+"/messages", ""
	m := &Model{cfg: cfg, name: cfg.Model, endpoint: ep.String(),
		version: cfg.Version, maxTokens: cfg.DefaultMaxTokens}
	if cfg.Name != "" {
		m.name = cfg.Name
	}
	if m.version == "" {
		m.version = DefaultVersion
	}
	if m.maxTokens == 0 {
		m.maxTokens = DefaultMaxTokens
	}
	m.call = llmhttp.Call{Client: client, Provider: "anthropic", Model: cfg.Model, Timeouts: t}
	return m, nil
}

// Name implements model.Model.
func (m *Model) Name() string { return m.name }

// newRequest returns a function building the HTTP request for body.
func (m *Model) newRequest(body []byte, stream bool) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("anthropic: %w", err)
		}
		h := req.Header
		h["Content-Type"] = []string{"application/json"}
		if stream {
			h["Accept"] = []string{"text/event-stream"}
		} else {
			h["Accept"] = []string{"application/json"}
		}
		h.Set("Anthropic-Version", m.version)
		if m.cfg.APIKey != "" {
			h.Set("X-Api-Key", m.cfg.APIKey)
		}
		for k, v := range m.cfg.Headers {
			h.Set(k, v)
		}
		return req, nil
	}
}

// Stream implements model.Model. The stream's errors are *model.Error
// values (an HTTP error, a watchdog, an error event, a stream cut short
// before message_stop), or ctx's error. Before the first event, a Chunk
// with Pulse set is yielded every Timeouts.FirstFeedback.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		body, err := m.encode(req, true)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		d := decoders.Get().(*decoder)
		defer d.release()
		m.call.StreamChunks(ctx, m.newRequest(body, true), "message_stop", func(ev, data []byte) (model.Chunk, bool, error) {
			c, done, err := d.event(&m.call, ev, data)
			return c.Chunk, done, err
		}, yield)
	}
}
