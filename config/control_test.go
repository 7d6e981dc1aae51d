package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/config"
)

func TestControlPoll(t *testing.T) {
	c, err := config.Parse("agentrt.yaml", []byte("control_poll: 250ms\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ControlPoll.Std(); got != 250*time.Millisecond {
		t.Fatalf("control_poll = %v", got)
	}
	for _, bad := range []string{"control_poll: soon\n", "control_poll: -1s\n", "control_poll: [1s]\n"} {
		_, err := config.Parse("agentrt.yaml", []byte(bad), nil)
		if err == nil || !strings.Contains(err.Error(), "agentrt.yaml:1:") || !strings.Contains(err.Error(), "control_poll") {
			t.Errorf("%q: %v, want an error naming the line and the key", bad, err)
		}
	}
}

func TestDefaultAgentKey(t *testing.T) {
	c, err := config.Parse("agentrt.yaml", []byte("default_agent: desk\nagents:\n  desk: {model: auto}\n  other: {model: auto}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultAgentName != "desk" {
		t.Fatalf("default_agent = %q", c.DefaultAgentName)
	}
	_, err = config.Parse("agentrt.yaml", []byte("default_agent: dsk\nagents:\n  desk: {model: auto}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "agentrt.yaml:1:") || !strings.Contains(err.Error(), `unknown agent "dsk"`) || !strings.Contains(err.Error(), "desk") {
		t.Fatalf("a default agent that is not an agent: %v", err)
	}
}
