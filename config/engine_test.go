package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// engine: temporal and how to reach Temporal are read with positions;
// an unknown engine, a bad address and a certificate without its key are
// errors at their line.
func TestEngine(t *testing.T) {
	t.Parallel()
	c, err := Parse("agentrt.yaml", []byte(base+`engine: temporal
temporal:
  address: temporal:7233
  namespace: agents
  task_queue: q
  step_timeout: 30m
  heartbeat_timeout: 5s
  tls: {cert: c.pem, key: k.pem, ca: ca.pem, server_name: temporal.internal}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Temporal{Address: "temporal:7233", Namespace: "agents", TaskQueue: "q", StepTimeout: Duration(30 * 60e9), HeartbeatTimeout: Duration(5e9),
		TLS: &TemporalTLS{Cert: "c.pem", Key: "k.pem", CA: "ca.pem", ServerName: "temporal.internal"}}
	if c.Engine != EngineTemporal || !cmp.Equal(c.Temporal, want) {
		t.Errorf("engine %q, temporal %+v", c.Engine, c.Temporal)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"unknown engine", "engine: temporl\n", `engine: unknown engine "temporl"; did you mean temporal? (want local or temporal)`},
		{"bad address", "temporal: {address: temporal}\n", `temporal.address: address "temporal": want host:port`},
		{"cert alone", "temporal: {tls: {cert: c.pem}}\n", "temporal.tls: cert and key go together"},
		{"unknown key", "temporal: {adress: x:1}\n", "temporal.adress: unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErr(t, base+tt.src, nil)
			if !strings.Contains(got, tt.want) {
				t.Errorf("error:\n got: %s\nwant: …%s…", got, tt.want)
			}
		})
	}
}
