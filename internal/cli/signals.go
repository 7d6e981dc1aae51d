package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
	if isTerminal(s.Err) {
		// Shared with the spinner: a signal's notice clears its frame
		// rather than being written after it.
		s.Err = terminalErr(s.Err)
	}
	notices := &signalNotices{w: s.Err}
	ctx = context.WithValue(ctx, signalNoticesKey{}, notices)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var wg sync.WaitGroup
	wg.Go(func() {
		n := 0
		for sig := range sigs {
			if n++; n == 1 {
				notices.say("stopping (send the signal again to exit at once)")
				var cause error // context.Canceled
				if sig == os.Interrupt {
					cause = agentrt.ErrSignalInterrupt
				}
				cancel(cause)
				continue
			}
			notices.say("exiting at once")
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

// signalNotices says what a signal does: as a line on stderr, or through
// the logger of a command that logs (agentrt serve), so that a log
// written as JSON stays JSON to its last line.
type signalNotices struct {
	w   io.Writer
	mu  sync.Mutex
	log *slog.Logger // guarded by mu; nil: a line on w
}

type signalNoticesKey struct{}

func (n *signalNotices) say(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log != nil {
		n.log.Info(msg)
		return
	}
	fmt.Fprintln(n.w, "agentrt: "+msg)
}

// logSignals makes the notices of the signals that stop the command of ctx
// go to log.
func logSignals(ctx context.Context, log *slog.Logger) {
	if n, ok := ctx.Value(signalNoticesKey{}).(*signalNotices); ok {
		n.mu.Lock()
		n.log = log
		n.mu.Unlock()
	}
}
