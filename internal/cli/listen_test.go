package cli_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// agentrt serve on an address another program listens on (another
// agentrt serve, most likely) says so, and the command that serves on
// another address, with the flags it was given.
func TestServeAddressInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	e := newEnv(t, demoConfig, nil)
	r := e.run("serve", "--addr", addr.String())
	next := net.JoinHostPort("127.0.0.1", strconv.Itoa(addr.Port+1))
	want := "agentrt: listen on " + addr.String() + ": the address is already in use (by another agentrt serve?); stop what listens there, or serve on another address: agentrt --config " + e.config + " serve --addr " + next + "\n"
	if r.code != cli.ExitFailed || r.out != "" || r.err != want {
		t.Errorf("serve on an address in use: %v\nwant exit %d and stderr %q", r, cli.ExitFailed, want)
	}
}
