package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/app"
)

// Execute runs the CLI as a process does, and returns the exit code. The
// first SIGINT or SIGTERM cancels the command: a run stops at once, stores
// the results its tools came back with, and says how to resume; after
// Ctrl-C (SIGINT) the run is canceled with agentrt.ErrSignalInterrupt and
// agentrt exits 130, as shells expect of a command stopped by Ctrl-C. A
// second signal exits at once with 128+signal (130 for Ctrl-C), even when
// a tool that ignores cancellation holds the run; the session then stays
// running in the store, and `agentrt resume` (in any process) takes it
// over.
func Execute(args []string, s Streams, opts app.Options) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var wg sync.WaitGroup
	wg.Go(func() {
		n := 0
		for sig := range sigs {
			if n++; n == 1 {
				fmt.Fprintln(s.Err, "agentrt: stopping (send the signal again to exit at once)")
				var cause error // context.Canceled
				if sig == os.Interrupt {
					cause = agentrt.ErrSignalInterrupt
				}
				cancel(cause)
				continue
			}
			fmt.Fprintln(s.Err, "agentrt: exiting at once")
			code := 130
			if ss, ok := sig.(syscall.Signal); ok {
				code = 128 + int(ss)
			}
			os.Exit(code)
		}
	})
	code := MainWith(ctx, args, s, opts)
	signal.Stop(sigs)
	close(sigs)
	wg.Wait()
	return code
}
