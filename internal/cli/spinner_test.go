//go:build unix

package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// rendered is what a terminal shows of raw output: "\r" goes back to the
// start of the line, and what follows writes over what was there.
func rendered(raw string) []string {
	var lines []string
	var cur []rune
	col := 0
	end := func() { lines = append(lines, strings.TrimRight(string(cur), " ")) }
	for _, r := range raw {
		switch r {
		case '\r':
			col = 0
		case '\n':
			end()
			cur, col = nil, 0
		default:
			if col < len(cur) {
				cur[col] = r
			} else {
				cur = append(cur, r)
			}
			col++
		}
	}
	if len(cur) > 0 {
		end()
	}
	return lines
}

// raw is everything the terminal was sent, carriage returns included.
func (tm *terminal) raw() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.screen.String()
}

// Ctrl-C while the spinner spins: the "stopping" line is a line of its
// own, not written after a frame, and no frame is left on the screen.
func TestSpinnerClearedOnCtrlC(t *testing.T) {
	t.Parallel()
	e := newEnv(t, slowConfig, slowFiles)
	tm := onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "run", "--session", "s1", "go")
	tm.waitFor(" thinking", 2) // it spins
	tm.typeText("\x03")
	if code := tm.wait(); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d; the terminal showed:\n%q", code, cli.ExitInterrupted, tm.raw())
	}
	screen := rendered(tm.raw())
	stopping := false
	for _, l := range screen {
		if strings.Contains(l, "thinking") {
			t.Errorf("a spinner frame is left on the screen: %q", l)
		}
		stopping = stopping || l == "agentrt: stopping (send the signal again to exit at once)"
	}
	if !stopping {
		t.Errorf("no line of its own says agentrt is stopping; the screen:\n%s", strings.Join(screen, "\n"))
	}
}
