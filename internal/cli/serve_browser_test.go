package cli_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// agentrt serve takes its browser policy from server: allowed_hosts,
// cors.allowed_origins and trusted_proxy. Without API keys it answers a
// listed Host and the loopback ones, no other; a proxy's request only
// with trusted_proxy; a preflight of a listed origin.
func TestServeProcessBrowserPolicyConfig(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	const app = "https://app.example"
	e := newEnv(t, demoConfig+"server:\n  allowed_hosts: [agents.internal]\n  cors: {allowed_origins: [\""+app+"\"]}\n  trusted_proxy: true\n", nil)
	s := startServe(t, e, nil)
	api := newAPI(t, s.url, "")
	for _, tc := range []struct {
		name, method, host string
		hdr                []string
		want               int
	}{
		{"a listed Host", "GET", "agents.internal:8080", nil, http.StatusOK},
		{"a loopback Host", "GET", "localhost", nil, http.StatusOK},
		{"another Host", "GET", "evil.example", nil, http.StatusMisdirectedRequest},
		{"through a trusted proxy", "GET", "", []string{"X-Forwarded-For", "203.0.113.9"}, http.StatusOK},
		{"a listed origin's preflight", "OPTIONS", "", []string{"Origin", app, "Access-Control-Request-Method", "POST"}, http.StatusNoContent},
		{"another origin's preflight", "OPTIONS", "", []string{"Origin", "https://evil.example", "Access-Control-Request-Method", "POST"}, http.StatusForbidden},
	} {
		req := api.request(t.Context(), tc.method, "/v1/agents", nil, tc.hdr...)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.want)
		}
		if tc.want == http.StatusNoContent && resp.Header.Get("Access-Control-Allow-Origin") != app {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want %s", tc.name, resp.Header.Get("Access-Control-Allow-Origin"), app)
		}
		if tc.want >= 400 && !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %s, want the API's error shape", tc.name, b)
		}
	}
	s.stopOK()
}
