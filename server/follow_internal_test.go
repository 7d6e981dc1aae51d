package server

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
)

// A turn followed from a seq before its end (an answer's continuation
// that ran to its end before its follower came, as an MCP call's after
// an elicitation) is followed, though its events have all been read by
// the time the follower looks: its follower watched the session first.
// FollowSession said "the session's watch ended before it began", at
// random (the two were ready together, and select took either), and the
// MCP call failed with it.
func TestFollowOfATurnThatEndedAtOnce(t *testing.T) {
	t.Parallel()
	s := newStreamServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := s.r.CreateSession(ctx, "", "s1", nil); err != nil {
		t.Fatal(err)
	}
	for _, err := range s.r.Run(ctx, "s1", agentrt.Input{Text: "hello"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 64 {
		fl := s.gw.FollowSession("s1", 0)
		f := s.startFeed(ctx, fl.Events)
		<-f.ended // the whole turn is in the feed: it watched, then it ended
		err := watching(fl, f)
		f.stop()
		if err != nil {
			t.Fatalf("a follower of a turn that had ended: %v", err)
		}
	}
}
