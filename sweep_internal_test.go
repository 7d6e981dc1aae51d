package agentrt

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A Sweeper sweeps at once, then after each wait: its period strayed by
// up to a fifth either way, as its random source says. The fake clock of
// the bubble measures the waits exactly.
func TestSweepJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		draws := []float64{0, 0.5, 0.75, 0.25, 0.999}
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		var at []time.Duration
		s := &Sweeper{Every: 10 * time.Second, Rand: func() float64 {
			u := draws[0]
			draws = draws[1:]
			return u
		}}
		s.sweep = func(context.Context) ([]*Run, error) {
			at = append(at, time.Since(start))
			if len(at) == 5 {
				cancel()
			}
			return nil, nil
		}
		if err := s.Run(ctx); err != nil {
			t.Fatalf("Run: %v, want nil once its context ends", err)
		}
		// 8 s for 0, 10 s for 0.5, 11 s for 0.75, 9 s for 0.25.
		want := []time.Duration{0, 8 * time.Second, 18 * time.Second, 29 * time.Second, 38 * time.Second}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("sweeps at (-want +got):\n%s", diff)
		}
	})
}

// Every wait is between 0.8 and 1.2 times the period, whatever the draw.
func TestJitteredBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	every := 30 * time.Second
	lo, hi := every*4/5, every*6/5
	seenLow, seenHigh := false, false
	for range 10000 {
		d := jittered(every, r.Float64())
		if d < lo || d >= hi {
			t.Fatalf("a wait of %v, want [%v, %v)", d, lo, hi)
		}
		seenLow = seenLow || d < every*9/10
		seenHigh = seenHigh || d > every*11/10
	}
	if !seenLow || !seenHigh {
		t.Errorf("the waits do not spread: below 0.9 %v, above 1.1 %v", seenLow, seenHigh)
	}
	for u, want := range map[float64]time.Duration{-1: lo, 0: lo, 0.5: every, 1: hi, 7: hi} {
		if got := jittered(every, u); got != want {
			t.Errorf("jittered(%v, %v) = %v, want %v", every, u, got, want)
		}
	}
}

// A sweep that fails is reported, and the sweeper goes on; one that
// cannot succeed later (no leases) ends it.
func TestSweepReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		failed := errors.New("the store is down")
		var reported []error
		sweeps := 0
		var resumed []*Run
		s := &Sweeper{Every: time.Minute, Rand: func() float64 { return 0.5 }, Report: func(err error) { reported = append(reported, err) },
			Resumed: func(h *Run) { resumed = append(resumed, h) }}
		h1, h2 := &Run{sessionID: "a"}, &Run{sessionID: "b"}
		s.sweep = func(context.Context) ([]*Run, error) {
			sweeps++
			switch sweeps {
			case 1:
				return nil, failed
			case 2:
				return []*Run{h1}, failed // some resumed, then the store failed
			case 3:
				return []*Run{h2}, nil
			}
			return nil, &Error{Kind: FailConfig, Code: CodeNoLeases}
		}
		err := s.Run(ctx)
		if AsError(err).ErrorCode() != CodeNoLeases || sweeps != 4 {
			t.Errorf("Run: %v after %d sweeps, want no_leases after 4", err, sweeps)
		}
		if len(reported) != 2 || !errors.Is(reported[0], failed) || !errors.Is(reported[1], failed) {
			t.Errorf("reported %v, want the two failures", reported)
		}
		if len(resumed) != 2 || resumed[0] != h1 || resumed[1] != h2 {
			t.Errorf("told of %d resumed runs, want the two the sweeps resumed", len(resumed))
		}
	})
}
