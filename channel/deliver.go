package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Run delivers what the agents owe the channels, from the store's
// outbox, until ctx ends: it claims the items that are due (a
// conversation's in order), sends each, and settles it — sent, tried
// again later (after the platform's Retry-After, else backing off), or
// given up (a permanent failure, or MaxAttempts). Any number of
// processes may run it over one store: an item is sent by the one that
// claimed it, at least once (see docs/channels.md for where a crash can
// send one twice). It returns once every send it started has ended.
func (h *Hub) Run(ctx context.Context) error {
	t := time.NewTicker(h.cfg.Poll)
	defer t.Stop()
	for {
		if err := h.DeliverDue(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("channel: the outbox could not be read", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-h.kick:
		}
	}
}

// DeliverDue delivers what is due now: it claims each conversation's
// oldest pending message (the store gives one a conversation, so that
// they go out in order), sends them at once (at most Workers), and
// settles each; while some were sent, it looks again (a conversation's
// next). It returns once all it claimed are settled.
func (h *Hub) DeliverDue(ctx context.Context) error {
	for range 64 { // a burst's worth; the next poll goes on
		now := h.cfg.Now()
		items, err := h.outbox.ClaimOutbox(ctx, h.cfg.Owner, now, now.Add(h.cfg.ClaimFor), 256)
		if err != nil || len(items) == 0 {
			return err
		}
		var sent atomic.Int64
		sem := make(chan struct{}, h.cfg.Workers)
		var wg sync.WaitGroup
		for _, it := range items {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if h.deliver(ctx, it) {
					sent.Add(1)
				}
			})
		}
		wg.Wait()
		if sent.Load() == 0 || ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// deliver sends one item and settles it; it reports whether the item is
// done with (sent, or given up).
func (h *Hub) deliver(ctx context.Context, it session.OutboxItem) bool {
	name, to, err := ParseSource(it.Source)
	b := h.byName[name]
	if err == nil && b == nil {
		err = fmt.Errorf("%w: %s", errNoChannel, name)
	}
	if err != nil {
		h.failed.Add(1)
		h.settle(ctx, it, session.OutboxSettle{GiveUp: true, Error: err.Error()})
		return true
	}
	// A send ends well within the claim, so that no other process takes
	// the item over while it may still be sent here.
	tctx, cancel := context.WithTimeout(session.WithTenant(ctx, it.Tenant), h.cfg.ClaimFor*2/3)
	ref, err := h.send(tctx, b, to, it)
	cancel()
	if err == nil {
		h.settle(ctx, it, session.OutboxSettle{Sent: true, Ref: ref})
		h.delivered.Add(1) // counted once marked sent
		return true
	}
	var se *SendError
	permanent := errors.As(err, &se) && se.Permanent
	if permanent || it.Attempts >= h.cfg.MaxAttempts {
		h.failed.Add(1)
		h.log.Error("channel: a message was given up", "channel", name, "session", it.SessionID, "seq", it.Seq, "attempts", it.Attempts, "error", err)
		h.settle(ctx, it, session.OutboxSettle{GiveUp: true, Error: err.Error()})
		return true
	}
	wait := backoff(it.Attempts)
	if se != nil && se.RetryAfter > 0 {
		wait = se.RetryAfter
	}
	h.retried.Add(1)
	h.log.Warn("channel: a message will be tried again", "channel", name, "session", it.SessionID, "seq", it.Seq, "in", wait, "error", err)
	h.settle(ctx, it, session.OutboxSettle{Error: err.Error(), Due: h.cfg.Now().Add(wait)})
	return false
}

// backoff is the wait after a failed attempt: a second, doubling, at
// most five minutes.
func backoff(attempts int) time.Duration {
	d := time.Second << min(max(attempts-1, 0), 9)
	return min(d, 5*time.Minute)
}

func (h *Hub) settle(ctx context.Context, it session.OutboxItem, s session.OutboxSettle) {
	if err := h.outbox.SettleOutbox(context.WithoutCancel(ctx), it.ID, h.cfg.Owner, s); err != nil {
		// Another process claimed it after ours lapsed: it is theirs.
		h.log.Warn("channel: an outbox item could not be settled", "item", it.ID, "error", err)
	}
}

// send renders the item's event and sends it: an answer (in parts, if
// longer than the platform takes), a question with its buttons, the
// answer to a question (the question's message edited to say who
// decided, where the channel can edit), a failure.
func (h *Hub) send(ctx context.Context, b *Binding, to Address, it session.OutboxItem) (string, error) {
	ev, err := h.event(ctx, it.SessionID, it.Seq)
	if err != nil {
		return "", err
	}
	key := strconv.FormatInt(it.ID, 10)
	switch d := ev.Data.(type) {
	case *session.Final:
		if dr := h.draftOf(it.SessionID, ev.RunID); dr != nil {
			return h.editDraft(ctx, b, to, it.SessionID, dr, d.Text, key)
		}
		return h.sendText(ctx, b, to, d.Text, key)
	case *session.InputRequired:
		return b.Channel.Send(ctx, to, Message{Text: questionText(d), Buttons: buttons(d), Key: key})
	case *session.InputResolved:
		return h.sendResolved(ctx, b, to, it, d, key)
	case *session.RunFinished:
		text := "Sorry, I could not finish that."
		if d.Status == session.StatusPaused {
			text = "I have stopped here: a limit was reached (" + d.Reason + "). Someone can let me go on."
		} else if d.Reason != "" {
			text = "Sorry, I could not finish that (" + d.Reason + ")."
		}
		return b.Channel.Send(ctx, to, Message{Text: text, Key: key})
	}
	return "", &SendError{Permanent: true, Err: fmt.Errorf("an event of type %s is nothing to send", ev.Type)}
}

// sendText sends text in as many messages as the platform's limit needs,
// split at paragraph, line or word ends; the first's ref is the answer's.
func (h *Hub) sendText(ctx context.Context, b *Binding, to Address, text, key string) (string, error) {
	var first string
	for i, part := range Split(text, b.Channel.TextLimit()) {
		ref, err := b.Channel.Send(ctx, to, Message{Text: part, Key: key + "." + strconv.Itoa(i)})
		if err != nil {
			return first, err
		}
		if i == 0 {
			first = ref
		}
	}
	return first, nil
}

// editDraft edits the message a streamed answer was written into to be
// the answer (its first part, the rest sent after it); a draft that
// cannot be edited any more (deleted) leaves the answer to be sent anew.
func (h *Hub) editDraft(ctx context.Context, b *Binding, to Address, sid string, dr *draft, text, key string) (string, error) {
	dr.mu.Lock()
	dr.closed = true // the follow's edits are over
	ref := dr.ref
	dr.mu.Unlock()
	parts := Split(text, b.Channel.TextLimit())
	if ref == "" || len(parts) == 0 {
		h.dropDraft(sid, dr)
		return h.sendText(ctx, b, to, text, key)
	}
	err := b.Channel.(Editor).Edit(ctx, to, ref, Message{Text: parts[0]})
	if err == nil {
		h.dropDraft(sid, dr)
	}
	var se *SendError
	if err != nil && errors.As(err, &se) && se.Permanent {
		h.log.Warn("channel: a streamed answer's message could not be edited; it is sent anew", "channel", b.Name, "error", err)
		h.dropDraft(sid, dr)
		return h.sendText(ctx, b, to, text, key)
	}
	if err != nil {
		return "", err
	}
	for i, part := range parts[1:] {
		if _, err := b.Channel.Send(ctx, to, Message{Text: part, Key: key + "." + strconv.Itoa(i+1)}); err != nil {
			return ref, err
		}
	}
	return ref, nil
}

// sendResolved edits the question's message to say who answered and how,
// where the channel can edit and the question was sent; else it says so
// in a message of its own only when the answer was not given in the chat
// (an expiry, an answer from the inspector).
func (h *Hub) sendResolved(ctx context.Context, b *Binding, to Address, it session.OutboxItem, d *session.InputResolved, key string) (string, error) {
	said := resolvedText(d)
	items, err := h.outbox.OutboxOf(ctx, it.SessionID)
	if err != nil {
		return "", err
	}
	for _, q := range items {
		if q.Kind != string(session.TypeInputRequired) || q.Ref == "" || q.State != session.OutboxSent {
			continue
		}
		qev, err := h.event(ctx, it.SessionID, q.Seq)
		if err != nil {
			return "", err
		}
		ir, ok := qev.Data.(*session.InputRequired)
		if !ok || ir.RequestID != d.RequestID {
			continue
		}
		if e, ok := b.Channel.(Editor); ok {
			return q.Ref, e.Edit(ctx, to, q.Ref, Message{Text: questionText(ir) + "\n\n" + said})
		}
		break
	}
	if strings.HasPrefix(d.By, b.Name+":") {
		return "", nil // answered here: the person saw their own press
	}
	return b.Channel.Send(ctx, to, Message{Text: said, Key: key})
}

// event reads event seq of a session (ctx's tenant).
func (h *Hub) event(ctx context.Context, id string, seq int64) (*session.Event, error) {
	for ev, err := range h.store.Events(ctx, id, seq-1) {
		if err != nil {
			return nil, err
		}
		if ev.Seq == seq {
			return ev, nil
		}
		break
	}
	return nil, &SendError{Permanent: true, Err: fmt.Errorf("session %s has no event %d (deleted?)", id, seq)}
}

// questionText is what a question says in a chat.
func questionText(q *session.InputRequired) string {
	switch q.Kind {
	case session.RequestApproval, session.RequestConfirm:
		var b strings.Builder
		b.WriteString(q.Question)
		for _, c := range q.Calls {
			fmt.Fprintf(&b, "\n`%s` %s", c.Name, compactJSON(c.Arguments))
		}
		return strings.TrimSpace(b.String())
	case session.RequestPrompt:
		return q.Question + "\n\n(Reply to answer.)"
	}
	return q.Question
}

// resolvedText says who answered a question, and how.
func resolvedText(d *session.InputResolved) string {
	who := d.By
	if _, rest, ok := strings.Cut(who, ":"); ok {
		who = rest
	}
	switch {
	case d.By == "system" && d.Reason == "expired":
		return "Nobody answered in time: " + d.Decision + "."
	case d.Decision == "approve":
		return "Approved by " + who + "."
	case d.Decision == "reject":
		return "Rejected by " + who + "."
	case len(d.Selected) > 0:
		return who + " chose " + strings.Join(d.Selected, ", ") + "."
	case d.Text != "":
		return who + " answered."
	}
	return who + ": " + d.Decision + "."
}

func compactJSON(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// buttons are a question's buttons: an approval's Approve, Reject and
// Always; a selection's options (a press chooses one, for a multiple
// choice too); none for a prompt (the person writes the answer).
func buttons(q *session.InputRequired) []Button {
	switch q.Kind {
	case session.RequestApproval:
		return []Button{
			{Label: "Approve", Data: encodeButton("y", q.RequestID, 0), Style: "primary"},
			{Label: "Reject", Data: encodeButton("n", q.RequestID, 0), Style: "danger"},
			{Label: "Always", Data: encodeButton("A", q.RequestID, 0)},
		}
	case session.RequestSelect:
		var out []Button
		for i, o := range q.Options {
			out = append(out, Button{Label: o, Data: encodeButton("s", q.RequestID, i)})
		}
		return out
	}
	return nil
}

// A button's data: what it does, the request, and an option's index —
// short, for the platforms that bound it (Telegram: 64 bytes).
func encodeButton(op, requestID string, option int) string {
	if op == "s" {
		return op + "|" + requestID + "|" + strconv.Itoa(option)
	}
	return op + "|" + requestID
}

// decodeButton reads a button's data back into the request it answers
// and the answer. A selection's option is named by its index: Selected
// holds "#INDEX", which the hub reads in the request's options.
func decodeButton(data string) (string, agentrt.Resolution, error) {
	parts := strings.Split(data, "|")
	if len(parts) < 2 || !strings.HasPrefix(parts[1], "req_") {
		return "", agentrt.Resolution{}, fmt.Errorf("button data %q is not a question's", data)
	}
	rid := parts[1]
	switch {
	case parts[0] == "y" && len(parts) == 2:
		return rid, agentrt.Resolution{Decision: "approve"}, nil
	case parts[0] == "n" && len(parts) == 2:
		return rid, agentrt.Resolution{Decision: "reject"}, nil
	case parts[0] == "A" && len(parts) == 2:
		return rid, agentrt.Resolution{Decision: "approve", Always: &agentrt.Always{Scope: "session"}}, nil
	case parts[0] == "s" && len(parts) == 3:
		if _, err := strconv.Atoi(parts[2]); err != nil {
			break
		}
		return rid, agentrt.Resolution{Decision: "answer", Selected: []string{"#" + parts[2]}}, nil
	}
	return "", agentrt.Resolution{}, fmt.Errorf("button data %q is not a question's", data)
}

// Split cuts text into parts of at most limit characters, at a paragraph
// end, else a line end, else a space, else anywhere (on a character's
// boundary).
func Split(text string, limit int) []string {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	var out []string
	for utf8.RuneCountInString(text) > limit {
		// The byte offset of the limit-th character.
		cut, n := 0, 0
		for i := range text {
			if n == limit {
				cut = i
				break
			}
			n++
		}
		window := text[:cut]
		at := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(window, sep); i > 0 {
				at = i
				break
			}
		}
		if at <= 0 {
			at = cut
		}
		out = append(out, strings.TrimRight(text[:at], " \n"))
		text = strings.TrimLeft(text[at:], " \n")
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}
