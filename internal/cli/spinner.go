package cli

import (
	"io"
	"strings"
	"sync"
	"time"
)

// spinnerFrame is how wide a frame of the spinner is: "| thinking".
const spinnerFrame = len("| thinking")

// clearFrame writes over a spinner's frame and goes back to the start of
// the line: spaces rather than an escape sequence, which every terminal
// shows the same.
var clearFrame = "\r" + strings.Repeat(" ", spinnerFrame) + "\r"

// ttyErr is stderr on a terminal, which the spinner shares with every
// other line written there (a signal's notice, a warning): a write clears
// the spinner's frame first, so that no line is written over it, and the
// spinner draws its next frame on the next line. Ctrl-C's "stopping" line
// is one such write.
type ttyErr struct {
	w       io.Writer
	mu      sync.Mutex
	showing bool // a spinner frame is on the line; guarded by mu
}

// terminalErr returns w as a *ttyErr: w itself when it is one.
func terminalErr(w io.Writer) *ttyErr {
	if t, ok := w.(*ttyErr); ok {
		return t
	}
	return &ttyErr{w: w}
}

func (t *ttyErr) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
	return t.w.Write(p)
}

// Fd is the terminal's, so that isTerminal sees one.
func (t *ttyErr) Fd() uintptr {
	if f, ok := t.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// frame shows a spinner frame at the start of the line.
func (t *ttyErr) frame(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	io.WriteString(t.w, "\r"+s)
	t.showing = true
}

// clear removes the spinner's frame, if one shows.
func (t *ttyErr) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
}

func (t *ttyErr) clearLocked() {
	if t.showing {
		io.WriteString(t.w, clearFrame)
		t.showing = false
	}
}

// spinner shows that agentrt is waiting on the model. Only on a terminal.
type spinner struct {
	w    *ttyErr
	mu   sync.Mutex
	done chan struct{} // guarded by mu; nil when it does not spin
	wg   sync.WaitGroup
}

func (s *spinner) start() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return
	}
	s.done = make(chan struct{})
	s.wg.Add(1)
	go func(done chan struct{}) {
		defer s.wg.Done()
		frames := `|/-\`
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				s.w.clear()
				return
			case <-t.C:
				s.w.frame(string(frames[i%len(frames)]) + " thinking")
			}
		}
	}(s.done)
}

// stop stops the spinner and clears its frame; it returns once it has.
func (s *spinner) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	done := s.done
	s.done = nil
	s.mu.Unlock()
	if done != nil {
		close(done)
		s.wg.Wait()
	}
}
