package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/config"
)

func TestGatewayKeys(t *testing.T) {
	t.Parallel()
	src := `gateway:
  debounce: 2s
  max_wait: 20s
  policy: queue
  workers: 8
  poll: 100ms
  max_pending: 10
  max_pending_bytes: 20000000
  max_restarts: 3
  sources:
    chat: {debounce: 3s, policy: reject, session: "support:chat-1", max_pending: 4}
    mail: {max_wait: 1m, max_pending_bytes: 4000000}
    ops: {policy: steer, max_restarts: 1}
agents:
  assistant:
    model: auto
    gateway: {debounce: 500ms, max_wait: 5s, policy: interrupt, max_pending: 2, max_pending_bytes: 2000000, max_restarts: 9}
`
	c, err := config.Parse("agentrt.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := func(d time.Duration) config.Duration { return config.Duration(d) }
	want := config.Gateway{
		GatewaySettings: config.GatewaySettings{Debounce: s(2 * time.Second), MaxWait: s(20 * time.Second), Policy: config.GatewayQueue,
			MaxPending: 10, MaxPendingBytes: 20000000, MaxRestarts: 3},
		Workers: 8,
		Poll:    s(100 * time.Millisecond),
		Sources: map[string]config.GatewaySource{
			"chat": {GatewaySettings: config.GatewaySettings{Debounce: s(3 * time.Second), Policy: config.GatewayReject, MaxPending: 4}, Session: "support:chat-1"},
			"mail": {GatewaySettings: config.GatewaySettings{MaxWait: s(time.Minute), MaxPendingBytes: 4000000}},
			"ops":  {GatewaySettings: config.GatewaySettings{Policy: config.GatewaySteer, MaxRestarts: 1}},
		},
	}
	if diff := cmp.Diff(want, c.Gateway); diff != "" {
		t.Errorf("gateway (-want +got):\n%s", diff)
	}
	wantAgent := config.GatewaySettings{Debounce: s(500 * time.Millisecond), MaxWait: s(5 * time.Second), Policy: config.GatewayInterrupt,
		MaxPending: 2, MaxPendingBytes: 2000000, MaxRestarts: 9}
	if diff := cmp.Diff(wantAgent, c.Agents["assistant"].Gateway); diff != "" {
		t.Errorf("agents.assistant.gateway (-want +got):\n%s", diff)
	}
	// A source's session is its mapping's, else the source's name.
	for source, session := range map[string]string{"chat": "support:chat-1", "mail": "mail", "other": "other"} {
		if got := c.SessionFor(source); got != session {
			t.Errorf("SessionFor(%q) = %q, want %q", source, got, session)
		}
	}
	// No gateway block: the zero settings (the gateway's defaults).
	d, err := config.Parse("agentrt.yaml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.Gateway{}, d.Gateway); diff != "" {
		t.Errorf("the default gateway (-want +got):\n%s", diff)
	}
}

func TestGatewayProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src, want string
		env             map[string]string
	}{
		{
			name: "unknown policy, with a suggestion",
			src:  "gateway:\n  policy: interupt\n",
			want: `agentrt.yaml:2:11: gateway.policy: unknown policy "interupt"; did you mean interrupt? (want interrupt, queue, steer, reject)`,
		},
		{
			name: "unknown policy of a source",
			src:  "gateway:\n  sources:\n    chat: {policy: drop}\n",
			want: `agentrt.yaml:3:20: gateway.sources.chat.policy: unknown policy "drop" (want interrupt, queue, steer, reject)`,
		},
		{
			name: "unknown policy of an agent",
			src:  "agents:\n  a: {model: auto, gateway: {policy: later}}\n",
			want: `agentrt.yaml:2:38: agents.a.gateway.policy: unknown policy "later" (want interrupt, queue, steer, reject)`,
		},
		{
			name: "negative debounce",
			src:  "gateway:\n  debounce: -1s\n",
			want: `agentrt.yaml:2:13: gateway.debounce: duration "-1s" is negative`,
		},
		{
			name: "negative max_wait of a source",
			src:  "gateway:\n  sources:\n    chat: {max_wait: -5}\n",
			want: `agentrt.yaml:3:22: gateway.sources.chat.max_wait: duration "-5" is negative`,
		},
		{
			name: "bad poll",
			src:  "gateway:\n  poll: often\n",
			want: `agentrt.yaml:2:9: gateway.poll: bad duration "often": want a Go duration such as "8s" or "2m", or whole seconds`,
		},
		{
			name: "negative workers",
			src:  "gateway:\n  workers: -2\n",
			want: "agentrt.yaml:2:12: gateway.workers: must not be negative, got -2",
		},
		{
			name: "a source's session that is not an id",
			src:  "gateway:\n  sources:\n    chat: {session: \"two words\"}\n",
			want: `agentrt.yaml:3:21: gateway.sources.chat.session: session id "two words": want only letters, digits, '_', '.', '-', ':' and '@'`,
		},
		{
			name: "a source's session that is an agent's rule log",
			src:  "gateway:\n  sources:\n    chat: {session: _rules.assistant}\n",
			want: `agentrt.yaml:3:21: gateway.sources.chat.session: session id "_rules.assistant": ids starting with _rules. or _claim. are the runtime's hidden sessions`,
		},
		{
			name: "a source's session from an unset variable",
			src:  "gateway:\n  sources:\n    chat: {session: \"${CHAT_SESSION}\"}\n",
			want: "agentrt.yaml:3:12: gateway.sources.chat.session: session is empty because ${CHAT_SESSION} is not set",
		},
		{
			name: "a source's session too long",
			src:  "gateway:\n  sources:\n    chat: {session: " + strings.Repeat("x", 129) + "}\n",
			want: `agentrt.yaml:3:21: gateway.sources.chat.session: session id "` + strings.Repeat("x", 129) + `": want 1 to 128 characters`,
		},
		{
			name: "max_wait below debounce",
			src:  "gateway:\n  debounce: 10s\n  max_wait: 2s\n",
			want: "agentrt.yaml:3:13: gateway.max_wait: max_wait (2s) is below debounce (10s), so every turn would wait max_wait; raise max_wait or lower debounce",
		},
		{
			name: "unknown key of a source",
			src:  "gateway:\n  sources:\n    chat: {sesion: c}\n",
			want: "agentrt.yaml:3:12: gateway.sources.chat.sesion: unknown key; did you mean session?",
		},
		{
			name: "a key of the gateway an agent does not take",
			src:  "agents:\n  a: {model: auto, gateway: {workers: 2}}\n",
			want: "agentrt.yaml:2:30: agents.a.gateway.workers: unknown key (known keys: debounce, max_wait, policy, max_pending, max_pending_bytes, max_restarts, prompts)",
		},
		{
			name: "negative max_pending",
			src:  "gateway:\n  max_pending: -1\n",
			want: "agentrt.yaml:2:16: gateway.max_pending: must not be negative, got -1",
		},
		{
			name: "max_pending_bytes below max_input_bytes",
			src:  "max_input_bytes: 4096\ngateway:\n  sources:\n    chat: {max_pending_bytes: 1000}\n",
			want: "agentrt.yaml:4:31: gateway.sources.chat.max_pending_bytes: max_pending_bytes (1000) is below max_input_bytes (4096), so the largest input taken would be refused however little waits; raise max_pending_bytes or lower max_input_bytes",
		},
		{
			name: "max_pending_bytes below the default max_input_bytes",
			src:  "agents:\n  a: {model: auto, gateway: {max_pending_bytes: 65536}}\n",
			want: "agentrt.yaml:2:49: agents.a.gateway.max_pending_bytes: max_pending_bytes (65536) is below max_input_bytes (1048576), so the largest input taken would be refused however little waits; raise max_pending_bytes or lower max_input_bytes",
		},
		{
			name: "max_restarts not a number",
			src:  "gateway:\n  max_restarts: many\n",
			want: `agentrt.yaml:2:17: gateway.max_restarts: expected an integer, got "many"`,
		},
		{
			name: "unknown key of the gateway",
			src:  "gateway:\n  debounse: 1s\n",
			want: "agentrt.yaml:2:3: gateway.debounse: unknown key; did you mean debounce?",
		},
		{
			name: "sources not a mapping",
			src:  "gateway:\n  sources: [chat]\n",
			want: "agentrt.yaml:2:12: gateway.sources: expected a mapping, got a list",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("agentrt.yaml", []byte(tc.src), func(k string) (string, bool) {
				v, ok := tc.env[k]
				return v, ok
			})
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
