package agentrt

import (
	"testing"
	"time"
)

// TestExpiresForIsDeterministic: several patterns may match a tool; the
// tool's own name wins, then the longest pattern, whatever the map order.
func TestExpiresForIsDeterministic(t *testing.T) {
	p := ApprovalPolicy{Expires: time.Hour, ExpiresFor: map[string]time.Duration{
		"*":        time.Minute,
		"fs.*":     2 * time.Minute,
		"fs.wr*":   3 * time.Minute,
		"fs.write": 4 * time.Minute,
		"net.?et":  5 * time.Minute,
		"net.g*":   6 * time.Minute,
	}}
	cases := map[string]time.Duration{
		"fs.write": 4 * time.Minute,
		"fs.wrap":  3 * time.Minute,
		"fs.read":  2 * time.Minute,
		"clock":    time.Minute,
		"net.get":  5 * time.Minute, // "net.?et" and "net.g*" are as long: byte order
	}
	for range 50 { // map order differs between iterations
		for name, want := range cases {
			if got := p.expiresFor(name); got != want {
				t.Fatalf("expiresFor(%q) = %v, want %v", name, got, want)
			}
		}
	}
	if got := (ApprovalPolicy{Expires: time.Hour}).expiresFor("x"); got != time.Hour {
		t.Errorf("no ExpiresFor: %v, want the default 1h", got)
	}
}
