package cli

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// listenError says why serve cannot listen on addr; for an address in use
// (another agentrt serve, most likely), how to serve on another: the
// command, with the global flags this one was given.
func (g *globals) listenError(addr string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	next := "HOST:PORT"
	if host, port, serr := net.SplitHostPort(addr); serr == nil {
		if p, perr := strconv.Atoi(port); perr == nil && p > 0 && p < 65535 {
			next = net.JoinHostPort(host, strconv.Itoa(p+1))
		}
	}
	return fmt.Errorf("listen on %s: the address is already in use (by another agentrt serve?); stop what listens there, or serve on another address: %s serve --addr %s",
		addr, g.flags().Prefix(), next)
}
