package app

import (
	"net/http"
	"time"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/tool"
)

// defaultA2ATimeout bounds a call to a remote A2A agent when its entry
// sets no timeout: long enough for a remote agent's turn with tools.
const defaultA2ATimeout = 10 * time.Minute

// a2aTools returns the config's remote A2A agents as tools, each named
// for its entry. The remote card is fetched on a tool's first call, so a
// remote agent that is down fails that call (data for the model), not the
// start of agentrt.
func a2aTools(cfg *config.Config) ([]tool.Tool, error) {
	var ts []tool.Tool
	for _, name := range cfg.A2AAgentNames() {
		e := cfg.A2AAgents[name]
		timeout := e.Timeout.Std()
		if timeout <= 0 {
			timeout = defaultA2ATimeout
		}
		hc := &http.Client{Timeout: timeout, Transport: headerTransport{headers: e.Headers, next: http.DefaultTransport}}
		t, err := a2a.Remote(name, e.URL, e.Description, hc)
		if err != nil {
			return nil, err // only an empty url, which parsing the config refuses
		}
		// The entry's timeout bounds the call too: the registry's default
		// for tools (a minute) would cut the remote task's run short.
		m := tool.MetaOf(t)
		m.Timeout = timeout
		ts = append(ts, tool.WithMeta(t, m))
	}
	return ts, nil
}

// headerTransport adds the configured headers (credentials of the remote
// server, typically) to each request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}
