package gateway

// The busy policy in one place: what newer input for a source does when
// the source's turn, or its session, is busy. Three situations, one
// decision each; the callers only carry the decision out:
//
//	                    interrupt   queue     steer     reject
//	turn runs here      interrupt   queue     steer     reject
//	session busy        interrupt   wait      wait      wait
//	source elsewhere    wait        decline   wait      wait
//
// "turn runs here": a worker of this process runs the source's turn
// (Submit's and the inbox watch's newer input, apply). "session busy":
// the turn cannot start because its session runs elsewhere — another
// process, another source's turn, a person's run — or waits for a person
// (notStarted). "source elsewhere": another process serves the source
// and a caller of Answer wants its answer now.

// busyAt is where the busy thing is.
type busyAt int

const (
	turnHere        busyAt = iota // the source's turn runs in this process
	sessionBusy                   // the turn's session runs elsewhere, or waits for a person
	sourceElsewhere               // another process serves the source (Answer)
)

// action is what the gateway does with newer input.
type action int

const (
	actQueue     action = iota // keep it pending: the turn after this one answers it
	actReject                  // refuse it, input_rejected, kept refused in the inbox
	actInterrupt               // interrupt the run at its next safe point; the turn restarts with the input merged
	actSteer                   // give it to the running run's next model call
	actWait                    // keep it pending, and look again later (the busy thing may end, or the source be let go)
	actDecline                 // keep it pending, and tell the caller who waits for its answer that it has none now
)

// decide is the busy policy: what policy p does with newer input when
// the source's turn, or its session, is busy at b.
func decide(p Policy, b busyAt) action {
	switch b {
	case turnHere:
		switch p {
		case Interrupt:
			return actInterrupt
		case Reject:
			return actReject
		case Steer:
			return actSteer
		}
		return actQueue
	case sessionBusy:
		if p == Interrupt {
			// Whatever runs the session stops for the newer input: a run of
			// another process, another source's turn, a person's run.
			return actInterrupt
		}
		return actWait
	}
	if p == Queue {
		// The input would wait for the other process's next turn.
		return actDecline
	}
	return actWait // that process applies its own decision to the input
}
