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
