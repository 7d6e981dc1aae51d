package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/llmhttp"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/model/demo"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/model/record"
	"github.com/agentrt/agentrt/model/scripted"
)

// Default model names when the environment gives a key but no model.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultAnthropicModel = "claude-sonnet-4-5"
	// DefaultOllamaURL is where a local Ollama listens.
	DefaultOllamaURL = "http://127.0.0.1:11434"
)

func (o Options) getenv(k string) string {
	if o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

// modelKey names a built model: the same entry with other timeouts is
// another client.
type modelKey struct {
	name     string
	timeouts model.Timeouts
}

// buildModel returns the model called name, built for timeouts t.
func (a *App) buildModel(ctx context.Context, cfg *config.Config, name string, t model.Timeouts, cache map[modelKey]model.Model, opts Options) (model.Model, error) {
	if m, ok := opts.Models[name]; ok {
		return m, nil
	}
	key := modelKey{name, t}
	if m, ok := cache[key]; ok {
		return m, nil
	}
	mc, ok := cfg.Models[name]
	if !ok {
		return nil, fmt.Errorf("model %q is not configured", name)
	}
	var m model.Model
	var err error
	switch mc.Provider {
	case "auto":
		m, err = a.autoModel(ctx, name, t, opts)
	case "demo":
		m = demo.New()
		a.say(name, fmt.Sprintf("agentrt: model %s is the offline demo model: arithmetic and the date only", name))
	case "scripted":
		path := mc.Script
		if !filepath.IsAbs(path) && cfg.File() != "" {
			path = filepath.Join(filepath.Dir(cfg.File()), path)
		}
		m, err = scripted.Load(path)
	case "openai":
		m, err = openai.New(openai.Config{Model: mc.Model, BaseURL: mc.BaseURL, APIKey: mc.APIKey, Headers: mc.Headers,
			Timeouts: t, HTTPClient: a.httpClient(t, opts), Media: mc.Media})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: mc.Model, BaseURL: mc.BaseURL, APIKey: mc.APIKey, Headers: mc.Headers,
			Timeouts: t, HTTPClient: a.httpClient(t, opts), Media: mc.Media})
	default:
		err = fmt.Errorf("provider %q is not available in this build", mc.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", name, err)
	}
	if mc.Provider == "openai" || mc.Provider == "anthropic" {
		a.providers.Store(m.Name(), mc.Provider)
	}
	if p := mc.Price; p != nil {
		m = model.Priced(m, model.Price{Input: p.InputPerMTok, Output: p.OutputPerMTok, Cached: p.CachedPerMTok})
	}
	if mc.Stream != nil && !*mc.Stream {
		m = model.Unstreamed(m)
	}
	if mc.InlineToolCalls != "" {
		mode, err := agentrt.ParseInlineMode(mc.InlineToolCalls)
		if err != nil {
			return nil, err
		}
		m = agentrt.WithInlineCalls(m, mode)
	}
	cache[key] = m
	return m, nil
}

// timeouts returns an agent's model timeouts: its config, then the
// AGENTRT_LLM_* environment variables, then the defaults.
func timeouts(ac config.Agent, opts Options) (model.Timeouts, error) {
	ct := ac.Timeouts
	t := model.Timeouts{FirstFeedback: time.Duration(ct.FirstFeedback), FirstChunk: time.Duration(ct.FirstChunk),
		Idle: time.Duration(ct.Idle), Hard: time.Duration(ct.Hard)}
	t, err := model.TimeoutsFromEnv(t, opts.getenv)
	if err != nil {
		return t, err
	}
	return t.WithDefaults(), nil
}

// autoModel picks the first model it can find (PRODUCT §1):
// OPENAI_API_KEY or OPENAI_BASE_URL, then ANTHROPIC_API_KEY, then a local
// Ollama that answers, else the offline demo model. It says which in a
// notice of model name (the config's entry, provider auto).
func (a *App) autoModel(ctx context.Context, name string, t model.Timeouts, opts Options) (model.Model, error) {
	env := opts.getenv
	if key, base := env("OPENAI_API_KEY"), env("OPENAI_BASE_URL"); key != "" || base != "" {
		chosen := orDefault(env("OPENAI_MODEL"), DefaultOpenAIModel)
		why := "OPENAI_API_KEY is set"
		if base != "" {
			why = "OPENAI_BASE_URL is " + base
		}
		a.say(name, fmt.Sprintf("agentrt: using OpenAI-compatible model %s (%s; OPENAI_MODEL picks another)", chosen, why))
		return openai.New(openai.Config{Model: chosen, BaseURL: base, APIKey: key, Timeouts: t, HTTPClient: a.httpClient(t, opts)})
	}
	if key := env("ANTHROPIC_API_KEY"); key != "" {
		chosen := orDefault(env("ANTHROPIC_MODEL"), DefaultAnthropicModel)
		a.say(name, fmt.Sprintf("agentrt: using Anthropic model %s (ANTHROPIC_API_KEY is set; ANTHROPIC_MODEL picks another)", chosen))
		return anthropic.New(anthropic.Config{Model: chosen, BaseURL: env("ANTHROPIC_BASE_URL"), APIKey: key, Timeouts: t, HTTPClient: a.httpClient(t, opts)})
	}
	ollama := ollamaURL(opts)
	if chosen, err := probeOllama(ctx, ollama, env("OLLAMA_MODEL")); err == nil {
		a.say(name, fmt.Sprintf("agentrt: using %s from the local Ollama at %s (OLLAMA_MODEL picks another)", chosen, ollama))
		return openai.New(openai.Config{Model: chosen, BaseURL: ollama + "/v1", Timeouts: t, HTTPClient: a.httpClient(t, opts)})
	} else if err != errNoOllama {
		a.say(name, fmt.Sprintf("agentrt: the local Ollama at %s is of no use: %v", ollama, err))
	}
	a.say(name, "agentrt: no model found; using the offline demo model (set OPENAI_API_KEY or ANTHROPIC_API_KEY, run Ollama, or add a model to agentrt.yaml)")
	return demo.New(), nil
}

// say records a notice for the user, once: one of building the config's
// model called model, or ("" for model) one of the app's own.
func (a *App) say(model, msg string) {
	if a.built {
		return
	}
	if !slices.Contains(a.Notices, msg) {
		a.Notices = append(a.Notices, msg)
	}
	if model != "" && !slices.Contains(a.modelNotices[model], msg) {
		a.modelNotices[model] = append(a.modelNotices[model], msg)
	}
}

// httpClient returns the client a provider's model sends its requests
// with: opts.HTTPClient when set (its owner closes it), else one of the
// app's for timeouts t, whose idle connections Close closes (they would
// keep two goroutines each for 90 seconds).
func (a *App) httpClient(t model.Timeouts, opts Options) *http.Client {
	if opts.HTTPClient != nil {
		return opts.HTTPClient
	}
	c := llmhttp.NewClient(t)
	a.onClose(func() error { c.CloseIdleConnections(); return nil })
	return c
}

// newTransport returns a transport of the app's own, like
// http.DefaultTransport, so that closing its idle connections closes no
// one else's.
func newTransport() *http.Transport { return http.DefaultTransport.(*http.Transport).Clone() }

func orDefault(s, def string) string {
	if s = strings.TrimSpace(s); s != "" {
		return s
	}
	return def
}

// ollamaURL is Options.OllamaURL, else OLLAMA_HOST (Ollama's own
// variable, with or without a scheme), else DefaultOllamaURL.
func ollamaURL(opts Options) string {
	if opts.OllamaURL != "" {
		return strings.TrimRight(opts.OllamaURL, "/")
	}
	h := strings.TrimSpace(opts.getenv("OLLAMA_HOST"))
	if h == "" {
		return DefaultOllamaURL
	}
	if !strings.Contains(h, "://") {
		h = "http://" + h
	}
	return strings.TrimRight(h, "/")
}

var errNoOllama = fmt.Errorf("no Ollama answers")

// probeOllama asks the Ollama at base for its models, briefly. It returns
// want if Ollama has it (or want is empty and Ollama has any: the first).
func probeOllama(ctx context.Context, base, want string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/tags", nil)
	if err != nil {
		return "", err
	}
	tr := newTransport()
	defer tr.CloseIdleConnections() // the probe's connection is not kept
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", errNoOllama
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /api/tags: HTTP %d", resp.StatusCode)
	}
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&tags); err != nil {
		return "", fmt.Errorf("GET /api/tags: %v", err)
	}
	if len(tags.Models) == 0 {
		return "", fmt.Errorf("it has no models (ollama pull qwen3)")
	}
	for _, m := range tags.Models {
		if want == "" || m.Name == want || strings.TrimSuffix(m.Name, ":latest") == want {
			return m.Name, nil
		}
	}
	return want, fmt.Errorf("it has no model %q", want)
}

// Environment variables naming a file of recorded provider traffic (see
// model/record): AGENTRT_RECORD writes every exchange with the providers
// to it, AGENTRT_REPLAY answers from it without a network.
const (
	EnvRecord = "AGENTRT_RECORD"
	EnvReplay = "AGENTRT_REPLAY"
)

// recordTraffic sets opts.HTTPClient to record or replay provider
// traffic when the environment asks for it.
func (a *App) recordTraffic(opts *Options) error {
	rec, rep := opts.getenv(EnvRecord), opts.getenv(EnvReplay)
	if rec == "" && rep == "" {
		return nil
	}
	if rec != "" && rep != "" {
		return fmt.Errorf("%s and %s are both set; set one", EnvRecord, EnvReplay)
	}
	if opts.HTTPClient != nil {
		return fmt.Errorf("%s/%s: the app already has an HTTP client", EnvRecord, EnvReplay)
	}
	path, mode := rec, record.Record
	if rep != "" {
		path, mode = rep, record.Replay
	}
	next := newTransport()
	tr, err := record.Open(path, mode, next)
	if err != nil {
		return err
	}
	a.onClose(func() error { next.CloseIdleConnections(); return nil })
	a.onClose(tr.Close) // first: it waits for the exchanges under way, then writes the recording
	opts.HTTPClient = &http.Client{Transport: tr, Timeout: model.DefaultTimeouts().RequestTimeout()}
	verb := "recording provider traffic to"
	if mode == record.Replay {
		verb = "replaying provider traffic from"
	}
	a.say("", "agentrt: "+verb+" "+path)
	return nil
}

// ModelProvider names the provider ("openai", "anthropic") of the
// configured model whose events name it model, or "" when the app does
// not know (a scripted model, the automatic choice): what traces record
// as gen_ai.provider.name.
func (a *App) ModelProvider(model string) string {
	p, _ := a.providers.Load(model)
	s, _ := p.(string)
	return s
}

// configModels are the models of the config as one agent's sessions may
// change to them (agentrt.ModelSet): built when first chosen, for the
// agent's timeouts.
type configModels struct {
	a    *App
	cfg  *config.Config
	t    model.Timeouts
	opts Options

	mu    sync.Mutex
	built map[modelKey]model.Model
}

// Names implements agentrt.ModelSet.
func (ms *configModels) Names() []string { return ms.cfg.ModelNames() }

// Model implements agentrt.ModelSet.
func (ms *configModels) Model(name string) (model.Model, error) {
	if _, ok := ms.cfg.Models[name]; !ok {
		return nil, fmt.Errorf("the config has no model %q (it has %s)", name, strings.Join(ms.cfg.ModelNames(), ", "))
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if err := ms.cfg.CheckModels(name); err != nil {
		return nil, err
	}
	return ms.a.buildModel(context.Background(), ms.cfg, name, ms.t, ms.built, ms.opts)
}
