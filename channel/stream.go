package channel

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/session"
)

// DefaultStreamEvery is how often a streamed answer's message is edited
// when its binding does not say: about what Telegram (a message a second
// in a chat), Slack (chat.update, about 50 a minute) and Discord (5 edits
// in 5 seconds) allow.
const DefaultStreamEvery = time.Second

// typingEvery is how often "typing" is shown again while a turn runs:
// Telegram's lasts five seconds.
const typingEvery = 4 * time.Second

// followStart bounds the wait for a conversation's turn to start once its
// message is stored (its debounce, a busy worker), and followFor the
// whole follow.
const (
	followStart = 2 * time.Minute
	followFor   = 30 * time.Minute
)

// draft is the message a run's answer is streamed into, which the
// delivery of the run's final edits into the answer rather than posting
// one. Its lock orders the follow's edits and the delivery's: once the
// delivery has it (closed), the follow edits no more.
type draft struct {
	mu     sync.Mutex
	ref    string // "" until posted
	run    string // the run streaming into it (a restart after newer input goes on in it)
	closed bool
}

// follows reports whether the hub follows b's turns (follow).
func (b *Binding) follows() bool {
	_, typist := b.Channel.(Typist)
	_, editor := b.Channel.(Editor)
	return typist || b.Stream && editor
}

// followFrom is where a follow of session sid, for a message about to be
// stored, starts: after its last event now — so that it sees the
// message's turn start however soon that is. A session that does not
// exist yet (the conversation's first message) is made now, of agent.
func (h *Hub) followFrom(ctx context.Context, sid, agent string) (int64, error) {
	s, err := h.store.GetSession(ctx, sid)
	if errors.Is(err, session.ErrNotFound) {
		if s, err = h.cfg.Runner.CreateSession(ctx, agent, sid, nil); err != nil {
			s, err = h.store.GetSession(ctx, sid) // made meanwhile
		}
	}
	if err != nil {
		return 0, err
	}
	return s.LastSeq, nil
}

// follow follows the turn that answers a message of conversation to,
// session sid, from its event after: "typing" while it runs (Typist),
// and, when the binding streams, the answer as it is written — posted
// once text comes, then edited at most every StreamEvery — which the
// final's delivery edits into the answer (the outbox stays what sends
// it: a streamed message is a preview, and a crash leaves the answer to
// the outbox). One follow per session at a time; it ends when a run of
// the session ends other than interrupted, or when none starts within
// followStart. It returns once the follow can see the turn's tokens (a
// second at most), or at once when it streams nothing.
func (h *Hub) follow(b *Binding, to Address, sid string, after int64) {
	_, editor := b.Channel.(Editor)
	stream := b.Stream && editor
	h.mu.Lock()
	if h.following[sid] {
		h.mu.Unlock()
		return
	}
	h.following[sid] = true
	h.mu.Unlock()
	subscribed := make(chan struct{})
	done := make(chan struct{})
	h.wg.Go(func() {
		defer close(done)
		defer func() {
			h.mu.Lock()
			delete(h.following, sid)
			h.mu.Unlock()
		}()
		f := &follower{h: h, b: b, to: to, sid: sid, stream: stream, every: b.streamEvery()}
		f.run(after, subscribed)
	})
	if !stream {
		return
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-subscribed:
	case <-done:
	case <-t.C:
	}
}

// streamEvery is how often b's streamed answer is edited.
func (b *Binding) streamEvery() time.Duration {
	if b.StreamEvery > 0 {
		return b.StreamEvery
	}
	return DefaultStreamEvery
}

type follower struct {
	h      *Hub
	b      *Binding
	to     Address
	sid    string
	stream bool
	every  time.Duration

	text      strings.Builder // the model call's text so far
	callAt    time.Time       // when the model call started
	shownAt   time.Time       // when the draft was last sent or edited
	shown     string          // what the draft says
	draft     *draft          // nil until text comes
	runID     string          // the run followed now
	full      bool            // the text outgrew a message: the draft stays as it is
	typingOff chan struct{}   // closed: stop showing "typing"
}

func (f *follower) run(after int64, subscribed chan struct{}) {
	h := f.h
	ctx, cancel := context.WithTimeout(h.life, followFor)
	defer cancel()
	ctx = session.WithTenant(ctx, h.tenant())
	f.typingOff = make(chan struct{})
	typingDone := make(chan struct{})
	go f.typing(ctx, typingDone)
	defer func() { <-typingDone }()
	defer f.stopTyping()
	started := make(chan struct{})
	startTimer := time.AfterFunc(followStart, func() {
		select {
		case <-started:
		default:
			cancel() // no turn came
		}
	})
	defer startTimer.Stop()
	for e, err := range h.cfg.Runner.WatchSubscribed(ctx, f.sid, after, func() { close(subscribed) }) {
		if err != nil {
			return
		}
		switch d := e.Data.(type) {
		case *session.RunStarted:
			select {
			case <-started:
			default:
				close(started)
			}
			f.runID = e.RunID
			if d := f.draft; d != nil {
				d.mu.Lock()
				d.run = e.RunID
				d.mu.Unlock()
			}
		case *session.ModelStarted:
			f.text.Reset()
			f.callAt = time.Now()
		case *session.Token:
			if f.stream && !d.Pulse {
				f.text.WriteString(d.Text)
				f.show(ctx, false)
			}
		case *session.ModelFinished:
			if len(d.ToolCalls) > 0 {
				// A call's words before its tools: the next call's replace
				// them in the draft.
				f.show(ctx, true)
			}
		case *session.Final:
			if f.draft != nil {
				h.kickDelivery() // the answer replaces the draft now
			}
		case *session.RunFinished:
			if d.Status != session.StatusInterrupted {
				return
			}
		}
	}
}

// show sends the draft, or edits it to say the text so far, when a
// StreamEvery has passed since the model call started and since the
// last edit (now, when force). A failure stops the streaming of this
// turn: the outbox still delivers its answer.
func (f *follower) show(ctx context.Context, force bool) {
	if !f.stream || f.full || f.text.Len() == 0 {
		return
	}
	now := time.Now()
	if !force && (now.Sub(f.callAt) < f.every || now.Sub(f.shownAt) < f.every) {
		return
	}
	limit := f.b.Channel.TextLimit()
	text := strings.TrimSpace(f.text.String())
	if utf8.RuneCountInString(text)+2 > limit {
		f.full = true
		return
	}
	text += " …"
	if text == f.shown {
		return
	}
	f.shownAt, f.shown = now, text
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d := f.draft
	if d == nil {
		d = &draft{run: f.runID}
		d.mu.Lock()
		f.draft = d
		f.h.mu.Lock()
		f.h.drafts[f.sid] = d
		f.h.mu.Unlock()
	} else {
		d.mu.Lock()
	}
	defer d.mu.Unlock()
	if d.closed {
		f.stream = false // the answer is being delivered into it
		return
	}
	var err error
	if d.ref == "" {
		d.ref, err = f.b.Channel.Send(sctx, f.to, Message{Text: text, Key: "draft-" + f.sid + "-" + now.Format("150405.000000000")})
		f.stopTyping()
	} else {
		err = f.b.Channel.(Editor).Edit(sctx, f.to, d.ref, Message{Text: text})
	}
	if err != nil {
		f.h.log.Warn("channel: a streamed answer could not be shown; the answer comes whole", "channel", f.b.Name, "session", f.sid, "error", err)
		f.stream = false
	}
}

func (f *follower) stopTyping() {
	select {
	case <-f.typingOff:
	default:
		close(f.typingOff)
	}
}

// typing shows "typing" now and again every typingEvery (Typist) until
// the turn ends or its draft is posted.
func (f *follower) typing(ctx context.Context, done chan struct{}) {
	defer close(done)
	t, ok := f.b.Channel.(Typist)
	if !ok {
		return
	}
	tick := time.NewTicker(f.h.typingEvery())
	defer tick.Stop()
	for {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := t.Typing(tctx, f.to); err != nil && ctx.Err() == nil {
			f.h.log.Warn("channel: typing could not be shown", "channel", f.b.Name, "error", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-f.typingOff:
			return
		case <-tick.C:
		}
	}
}

// draftOf is the draft run of session sid streams into, nil for none.
func (h *Hub) draftOf(sid, run string) *draft {
	h.mu.Lock()
	d := h.drafts[sid]
	h.mu.Unlock()
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.run != run {
		return nil
	}
	return d
}

// dropDraft forgets session sid's draft d once the answer is in it.
func (h *Hub) dropDraft(sid string, d *draft) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.drafts[sid] == d {
		delete(h.drafts, sid)
	}
}

// kickDelivery makes Run look at the outbox now.
func (h *Hub) kickDelivery() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}
