package agentrt

import (
	"context"
	"time"
)

// errHandedOver is the cause Shutdown cancels the runs it hands over
// with: their end is not recorded (see Exec.fail).
var errHandedOver error = &Error{Kind: FailCanceled, Code: CodeShuttingDown, Msg: "the process is shutting down: the run is left for another to resume"}

// Shutdown stops this runner the way a server that is being replaced
// should. Until ctx ends it lets the runs in progress go on and end by
// themselves (their steps commit as usual); then it stops those still
// running without recording an end: each stops where it is, as if its
// process had died, and lets go of its session at once, which stays
// running for any runner on the store to resume (Recover) without
// waiting for a lease to expire. It returns as Close does, once every use
// of a session has ended (bounded by the store's own waits).
//
// A run that does not stop within a few seconds of being told to (a tool
// that ignores its context) is left behind: its session's lease is
// released all the same, Shutdown returns an error saying so, and a
// later Close does not wait for it.
//
// Close, by contrast, cancels the runs: they end canceled, for a person
// to resume.
func (r *Runner) Shutdown(ctx context.Context) error {
	// Runs the store stopped are left to the runner that takes over, as
	// those still running are.
	r.revive.close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !r.reg.idle() {
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	runs := r.reg.close()
	for _, h := range runs {
		h.CancelCause(errHandedOver)
	}
	r.stepping.closeAll()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	err := r.Close(wctx)
	if err != nil {
		// A run that ignores its cancellation (a tool stuck in a call
		// that does not heed its context): let go of its session anyway,
		// so that another process takes it over now rather than when the
		// lease expires (its late writes are fenced once one does), and
		// let a later Close not wait for it again.
		for _, h := range runs {
			h.lease.stop()
		}
		r.gaveUp.Store(true)
	}
	return err
}
