//go:build unix

package agentrt

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has id pid.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
