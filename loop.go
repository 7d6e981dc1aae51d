package agentrt

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/session"
)

// LoopDetection guards a run against a model that repeats itself, with
// three detectors counted over the tool calls of the current turn:
//
//   - repeat: the same tool with the same arguments, called again;
//   - ping_pong: the turn's last calls alternate between two calls, A B A
//     B …, counted as the calls that repeated the pair (A B A B A B is 4);
//   - no_progress: the turn's last calls each brought a result the turn
//     had already seen (whatever their arguments).
//
// At Warning the run goes on with a loop_warning event and a reminder the
// model sees as a user message (once per detector and turn); at Critical
// it stops, failed, with an error event of code loop_detected that says
// what repeated. The counts are folded from the log (State.LoopCalls), so
// they survive a crash and a resume; a person's retry of the failed run
// starts them again.
type LoopDetection struct {
	// Warning and Critical are the counts that warn and stop; zero means
	// DefaultLoopWarning and DefaultLoopCritical.
	Warning, Critical int
	// Off switches the detectors off.
	Off bool
}

// Defaults of LoopDetection.
const (
	DefaultLoopWarning  = 4
	DefaultLoopCritical = 8
)

func (l LoopDetection) thresholds() (warning, critical int) {
	return cmp.Or(l.Warning, DefaultLoopWarning), cmp.Or(l.Critical, DefaultLoopCritical)
}

// check reports what makes l unusable.
func (l LoopDetection) check() error {
	if l.Off {
		return nil
	}
	if l.Warning < 0 || l.Critical < 0 {
		return fmt.Errorf("loop_detection: thresholds must be positive (warning %d, critical %d)", l.Warning, l.Critical)
	}
	if w, c := l.thresholds(); w >= c {
		return fmt.Errorf("loop_detection: warning (%d) must be below critical (%d)", w, c)
	}
	return nil
}

// LoopCall is a tool call of the turn as the loop detectors see it: the
// tool, and fingerprints of its arguments (compacted JSON) and of its
// outcome.
type LoopCall struct {
	Name   string `json:"name"`
	Args   uint64 `json:"args"`
	Result uint64 `json:"result"`
}

func loopCallOf(name string, args json.RawMessage, r *session.ToolResult) LoopCall {
	c := LoopCall{Name: name, Args: hashJSON(fnvOffset, args)}
	if r.OK {
		c.Result = hashJSON(fnvStep(fnvOffset, 1), r.Result)
	} else {
		c.Result = hashJSON(fnvStep(fnvOffset, 0), []byte(r.Error))
	}
	return c
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvStep(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

// hashJSON hashes b from h, leaving out the whitespace between JSON
// tokens, so that {"a": 1} and {"a":1} are the same call. Bytes that are
// not JSON are hashed as they are, whitespace aside.
func hashJSON(h uint64, b []byte) uint64 {
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		h = fnvStep(h, c)
	}
	return h
}

// loopFinding is the strongest detector's count over calls.
type loopFinding struct {
	detector string
	count    int
	alt      int // the alternating tail's length, for ping_pong
}

func detectLoop(calls []LoopCall) loopFinding {
	n := len(calls)
	if n == 0 {
		return loopFinding{}
	}
	last := calls[n-1]
	same := func(a, b LoopCall) bool { return a.Name == b.Name && a.Args == b.Args }

	repeat := 0
	for _, c := range calls {
		if same(c, last) {
			repeat++
		}
	}
	best := loopFinding{detector: "repeat", count: repeat}

	alt := 1 // the length of the alternating tail A B A B …
	for i := n - 1; i >= 1; i-- {
		if same(calls[i], calls[i-1]) || (i >= 2 && !same(calls[i], calls[i-2])) {
			break
		}
		alt++
	}
	// Counted as the calls that repeated the pair: A B A B A B is 4.
	if alt >= 4 && alt-2 > best.count {
		best = loopFinding{detector: "ping_pong", count: alt - 2, alt: alt}
	}

	stale := 0 // the tail of calls whose result the turn had already seen
	for i := n - 1; i >= 0; i-- {
		seen := false
		for _, c := range calls[:i] {
			if c.Result == calls[i].Result {
				seen = true
				break
			}
		}
		if !seen {
			break
		}
		stale++
	}
	if stale > best.count { // on a tie, the more precise detector above says it
		best = loopFinding{detector: "no_progress", count: stale}
	}
	return best
}

// detail says in words what f found in calls.
func (f loopFinding) detail(calls []LoopCall) string {
	n := len(calls)
	switch f.detector {
	case "ping_pong":
		return fmt.Sprintf("%s and %s were called in turn, %d calls in a row, each time with the same arguments", calls[n-2].Name, calls[n-1].Name, f.alt)
	case "no_progress":
		return fmt.Sprintf("the last %d tool calls brought nothing the turn had not seen already", f.count)
	}
	return fmt.Sprintf("%s was called %d times in this turn with the same arguments", calls[n-1].Name, f.count)
}

// checkLoops runs the loop detectors after a batch of tool calls: a
// loop_warning (with its reminder) at the warning count, an error that
// stops the run at the critical count.
func (x *Exec) checkLoops() error {
	l := x.agent.LoopDetection
	if l.Off {
		return nil
	}
	warning, critical := l.thresholds()
	calls := x.st.LoopCalls
	f := detectLoop(calls)
	switch {
	case f.count >= critical:
		return &Error{Kind: FailPolicy, Code: CodeLoopDetected,
			Msg: fmt.Sprintf("stopped a loop: %s (loop_detection.critical is %d); resume the session to let it try again", f.detail(calls), critical)}
	case f.count >= warning && !slices.Contains(x.st.LoopWarned, f.detector):
		detail := f.detail(calls)
		emit(x, session.LoopWarning{Detector: f.detector, Detail: detail, Count: f.count, Threshold: warning,
			Reminder: "[loop warning] " + detail + ". Repeating it will not help: use what you have, try something different, or answer now."})
	}
	return nil
}
