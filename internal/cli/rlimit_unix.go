//go:build unix

package cli

import "syscall"

// raiseFileLimit raises the process's limit on open files to its hard
// limit (Go's runtime raises it to one below since Go 1.19; this says so
// and takes the last one), and returns the limit and the hard limit. The
// processes agentrt starts (MCP servers) inherit it.
func raiseFileLimit() (limit, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return lim.Cur, lim.Max, err // some systems cap it below the hard limit
		}
		lim = raised
	}
	return lim.Cur, lim.Max, nil
}
