package gateway_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// ev is an event of run run with payload d.
func ev(seq int64, run string, d session.Data) *session.Event {
	return &session.Event{Seq: seq, RunID: run, Type: d.EventType(), Data: d}
}

// The tracker draws the turn's line in a log alone, as every replica
// does: which events are the turn's, and the outcome at its end.
func TestTurnTracker(t *testing.T) {
	started := func(seq int64, run, turn string, inputs ...string) *session.Event {
		return ev(seq, run, &session.RunStarted{TurnID: turn, Inputs: inputs})
	}
	finished := func(seq int64, run string, st session.Status) *session.Event {
		return ev(seq, run, &session.RunFinished{Status: st})
	}
	for _, tc := range []struct {
		name  string
		track *gateway.TurnTracker
		log   []*session.Event
		kept  []int64
		end   *gateway.Outcome
	}{{
		name:  "another source's run first, then the input's",
		track: gateway.TrackInput("in2"),
		log:   []*session.Event{started(1, "r1", "t1", "in1"), finished(2, "r1", session.StatusDone), started(3, "r2", "t2", "in2"), finished(4, "r2", session.StatusDone)},
		kept:  []int64{3, 4},
		end:   &gateway.Outcome{State: gateway.TurnAnswered, Status: session.StatusDone, TurnID: "t2", RunID: "r2"},
	}, {
		name:  "a restart after newer input keeps the turn; another run between is not the turn's",
		track: gateway.TrackInput("in1"),
		log: []*session.Event{started(1, "r1", "t1", "in1"), ev(2, "r1", &session.Interrupted{Reason: "newer input", Inputs: []string{"in3"}}),
			finished(3, "r1", session.StatusInterrupted), started(4, "rx", "tx", "in9"), finished(5, "rx", session.StatusDone),
			started(6, "r2", "t1", "in3"), ev(7, "r2", &session.Final{Text: "ok"}), finished(8, "r2", session.StatusDone)},
		kept: []int64{1, 2, 3, 6, 7, 8},
		end:  &gateway.Outcome{State: gateway.TurnAnswered, Status: session.StatusDone, TurnID: "t1", RunID: "r2"},
	}, {
		name:  "a log without turn ids: the restart is the run that answers the newer input",
		track: gateway.TrackInput("in1"),
		log: []*session.Event{started(1, "r1", "", "in1"), ev(2, "r1", &session.Interrupted{Inputs: []string{"in3"}}),
			finished(3, "r1", session.StatusInterrupted), started(4, "r2", "", "in3"), finished(5, "r2", session.StatusWaiting)},
		kept: []int64{1, 2, 3, 4, 5},
		end:  &gateway.Outcome{State: gateway.TurnAnswered, Status: session.StatusWaiting, TurnID: "r2", RunID: "r2"},
	}, {
		name:  "a person's interrupt ends the turn",
		track: gateway.TrackInput("in1"),
		log: []*session.Event{started(1, "r1", "t1", "in1"), ev(2, "r1", &session.Interrupted{Reason: "stop"}),
			finished(3, "r1", session.StatusInterrupted), started(4, "r2", "t2", "in2")},
		kept: []int64{1, 2, 3},
		end:  &gateway.Outcome{State: gateway.TurnInterrupted, Status: session.StatusInterrupted, Code: "interrupted", Reason: "stop", TurnID: "t1", RunID: "r1"},
	}, {
		name:  "the newer input steered into another turn: handed over",
		track: gateway.TrackInput("in1"),
		log: []*session.Event{started(1, "r1", "t1", "in1"), ev(2, "r1", &session.Interrupted{Inputs: []string{"in3"}}),
			finished(3, "r1", session.StatusInterrupted), started(4, "rx", "tx", "in9"), ev(5, "rx", &session.InputSteered{Inputs: []string{"in3"}, TurnID: "tx"})},
		kept: []int64{1, 2, 3},
		end: &gateway.Outcome{State: gateway.TurnHandedOver, TurnID: "t1", RunID: "r1", HandedTo: "tx",
			Reason: "the newer input that interrupted the turn was given to another turn's run"},
	}, {
		name:  "an input steered into a running run: the rest of that run",
		track: gateway.TrackInput("in2"),
		log: []*session.Event{started(1, "r1", "t1", "in1"), ev(2, "r1", &session.RoundStarted{Round: 1}),
			ev(3, "r1", &session.InputSteered{Inputs: []string{"in2"}, TurnID: "t1"}), ev(4, "r1", &session.Error{Code: "model_error", Message: "down"}), finished(5, "r1", session.StatusFailed)},
		kept: []int64{3, 4, 5},
		end:  &gateway.Outcome{State: gateway.TurnFailed, Status: session.StatusFailed, Code: "model_error", Reason: "down", TurnID: "t1", RunID: "r1"},
	}, {
		name:  "a known run, answered and resumed",
		track: gateway.TrackRun("r1"),
		log: []*session.Event{ev(5, "r1", &session.InputResolved{RequestID: "q1"}), ev(6, "r1", &session.RunResumed{Reason: "approval"}),
			finished(7, "r1", session.StatusCanceled)},
		kept: []int64{5, 6, 7},
		end:  &gateway.Outcome{State: gateway.TurnInterrupted, Status: session.StatusCanceled, Code: "canceled", TurnID: "r1", RunID: "r1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var kept []int64
			var end *gateway.Outcome
			for _, e := range tc.log {
				keep, o := tc.track.See(e)
				if keep {
					kept = append(kept, e.Seq)
				}
				if o != nil {
					if end != nil {
						t.Fatalf("a second end at seq %d", e.Seq)
					}
					end = o
				}
			}
			if diff := cmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.end, end); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}
