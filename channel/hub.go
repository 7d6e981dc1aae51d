package channel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// Binding is a channel as the hub serves it: its name (the first part of
// its sources and of its URL, /v1/channels/NAME/…), the agent its
// conversations talk to, and who may talk to it and decide for it.
type Binding struct {
	Name    string
	Channel Channel
	// Agent is the agent of its conversations' sessions ("": the
	// runner's default).
	Agent string
	// Allow, when not empty, are the senders (or conversations) that may
	// talk to the agent; another sender's messages never reach it, and
	// get Refusal ("": nothing).
	Allow   []string
	Refusal string
	// Approvers, when not empty, are the senders who may answer the
	// agent's questions (press an approval's buttons); empty: whoever may
	// talk to it.
	Approvers []string
	// AckWithin is how long the platform waits for a request's answer;
	// zero: the channel's (Hurried), else DefaultAckWithin. Attachments
	// are downloaded for two thirds of it before the message is stored;
	// those that take longer follow it, as an input of their own, after
	// the answer.
	AckWithin time.Duration
	// Stream, for a channel that can edit its messages (Editor), shows
	// an answer as it is written: posted once text comes, edited at most
	// every StreamEvery (zero: DefaultStreamEvery), and edited into the
	// answer when it is delivered.
	Stream      bool
	StreamEvery time.Duration
}

// ackWithin is how long b's platform waits for an answer.
func (b *Binding) ackWithin() time.Duration {
	if b.AckWithin > 0 {
		return b.AckWithin
	}
	if h, ok := b.Channel.(Hurried); ok && h.AckWithin() > 0 {
		return h.AckWithin()
	}
	return DefaultAckWithin
}

// Config configures a Hub.
type Config struct {
	Runner   *agentrt.Runner
	Gateway  *gateway.Gateway
	Channels []Binding
	// Tenant is the tenant of the channels' sessions ("": the default).
	Tenant string
	// Owner names this process in the outbox's claims (the runner's
	// owner when empty).
	Owner string
	Log   *slog.Logger
	Now   func() time.Time
	// Poll is how often the outbox is looked at; zero: 200 ms.
	Poll time.Duration
	// MaxBody bounds a platform's request; zero: 1 MiB.
	MaxBody int64
	// ClaimFor is how long a claim on an item lasts: a send is given two
	// thirds of it, and past it another process may send the item again.
	// Zero: a minute.
	ClaimFor time.Duration
	// MaxAttempts is how many times a message is tried before it is
	// given up; zero: 12 (backing off from a second to 5 minutes: about
	// half an hour in all).
	MaxAttempts int
	// Workers bounds the conversations delivered to at once; zero: 16.
	Workers int
	// MaxFileBytes bounds an attachment downloaded; zero:
	// gateway.DefaultMaxFileBytes.
	MaxFileBytes int64
	// TypingEvery is how often "typing" is shown again while a turn
	// runs; zero: 4 s (Telegram's lasts 5).
	TypingEvery time.Duration
}

// Hub serves channels: their platforms' requests, and the delivery of
// what the agents owe them.
type Hub struct {
	cfg    Config
	store  session.Store
	outbox session.Outbox
	byName map[string]*Binding
	log    *slog.Logger

	wg   sync.WaitGroup // the background sends (refusals, acknowledgements), late downloads, follows
	life context.Context
	end  context.CancelFunc // ends life: Close
	kick chan struct{}      // a streamed final is due: deliver now

	mu        sync.Mutex
	following map[string]bool   // the sessions this hub follows the turn of (stream.go); guarded by mu
	drafts    map[string]*draft // by session: the message its run's answer streams into; guarded by mu

	// Counts, for tests and metrics.
	received, refused, ignored, duplicates, delivered, retried, failed atomic.Int64
}

// New makes a hub. The runner's store must keep an outbox, and the
// runner deliver to the channels' sources (agentrt.Config.Deliver:
// Owns).
func New(cfg Config) (*Hub, error) {
	if cfg.Runner == nil || cfg.Gateway == nil {
		return nil, errors.New("channel: a hub needs a runner and a gateway")
	}
	ob, ok := cfg.Runner.Store().(session.Outbox)
	if !ok {
		return nil, fmt.Errorf("channel: the store (%T) keeps no outbox", cfg.Runner.Store())
	}
	h := &Hub{cfg: cfg, store: cfg.Runner.Store(), outbox: ob, byName: map[string]*Binding{},
		log: cmp.Or(cfg.Log, slog.New(slog.DiscardHandler)), kick: make(chan struct{}, 1),
		following: map[string]bool{}, drafts: map[string]*draft{}}
	if h.cfg.Now == nil {
		h.cfg.Now = time.Now
	}
	h.cfg.Poll = cmp.Or(cfg.Poll, 200*time.Millisecond)
	h.cfg.MaxBody = cmp.Or(cfg.MaxBody, 1<<20)
	h.cfg.ClaimFor = cmp.Or(cfg.ClaimFor, time.Minute)
	h.cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 12)
	h.cfg.Workers = cmp.Or(cfg.Workers, 16)
	h.cfg.MaxFileBytes = cmp.Or(cfg.MaxFileBytes, gateway.DefaultMaxFileBytes)
	h.cfg.Owner = cmp.Or(cfg.Owner, cfg.Runner.Owner())
	for i := range cfg.Channels {
		b := &cfg.Channels[i]
		if err := CheckName(b.Name); err != nil {
			return nil, err
		}
		if b.Channel == nil {
			return nil, fmt.Errorf("channel %q: no channel", b.Name)
		}
		if _, dup := h.byName[b.Name]; dup {
			return nil, fmt.Errorf("channel %q: configured twice", b.Name)
		}
		if _, ok := b.Channel.(Editor); b.Stream && !ok {
			return nil, fmt.Errorf("channel %q: stream: the platform's messages cannot be edited (%T)", b.Name, b.Channel)
		}
		h.byName[b.Name] = b
	}
	h.life, h.end = context.WithCancel(context.Background())
	return h, nil
}

func (h *Hub) tenant() string { return cmp.Or(h.cfg.Tenant, session.DefaultTenant) }

func (h *Hub) typingEvery() time.Duration { return cmp.Or(h.cfg.TypingEvery, typingEvery) }

// CheckName reports whether name can name a channel: 1 to 32 letters,
// digits, '_' or '-'.
func CheckName(name string) error {
	if name == "" || len(name) > 32 {
		return fmt.Errorf("channel name %q: want 1 to 32 letters, digits, '_' or '-'", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("channel name %q: want 1 to 32 letters, digits, '_' or '-'", name)
		}
	}
	return nil
}

// Owns reports whether source is a conversation of one of the channels
// named: what agentrt.Config.Deliver wants.
func Owns(names ...string) func(source string) bool {
	return func(source string) bool {
		name, _, ok := strings.Cut(source, ":")
		return ok && slices.Contains(names, name)
	}
}

// Source names the gateway source of a channel's conversation (and
// thread): NAME:CONVERSATION[:THREAD], each part kept as it is when it is
// made of letters, digits, '_', '.', '-' and '@' only, else written as
// '@' and its bytes in hex (so that the source is a session id, and
// reads back: Address).
func Source(name string, to Address) string {
	s := name + ":" + part(to.Conversation)
	if to.Thread != "" {
		s += ":" + part(to.Thread)
	}
	return s
}

func part(s string) string {
	plain := s != "" && s[0] != '@'
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '@'
	}
	if plain {
		return s
	}
	return fmt.Sprintf("@%x", s)
}

func unpart(s string) (string, error) {
	if !strings.HasPrefix(s, "@") {
		return s, nil
	}
	var b []byte
	if _, err := fmt.Sscanf(s[1:], "%x", &b); err != nil {
		return "", fmt.Errorf("source part %q: %w", s, err)
	}
	return string(b), nil
}

// ParseSource reads a channel's source back: its name and address.
func ParseSource(source string) (name string, to Address, err error) {
	parts := strings.Split(source, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return "", Address{}, fmt.Errorf("source %q is not a channel's (NAME:CONVERSATION[:THREAD])", source)
	}
	if to.Conversation, err = unpart(parts[1]); err != nil {
		return "", Address{}, err
	}
	if len(parts) == 3 {
		if to.Thread, err = unpart(parts[2]); err != nil {
			return "", Address{}, err
		}
	}
	return parts[0], to, nil
}

// Handler serves the channels' platforms at /v1/channels/{name}/{path...}.
func (h *Hub) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/channels/{name}/{path...}", h.serve)
	return mux
}

// serve verifies a platform's request, stores the messages it carries in
// the gateway's inbox (durably, before answering), answers the button
// presses, and answers the platform.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now() // a deadline of this process's clock
	b := h.byName[r.PathValue("name")]
	if b == nil {
		httpError(w, http.StatusNotFound, "no channel "+r.PathValue("name"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a request of channel %s may hold %d bytes", b.Name, h.cfg.MaxBody))
			return
		}
		httpError(w, http.StatusBadRequest, "read the request: "+err.Error())
		return
	}
	got, err := b.Channel.Receive(&Request{Method: r.Method, Path: r.PathValue("path"), Query: r.URL.Query(), Header: r.Header, Body: body}, h.cfg.Now())
	if err != nil {
		h.refused.Add(1)
		var ref *Refused
		status := http.StatusBadRequest
		if errors.As(err, &ref) {
			status = http.StatusUnauthorized
		}
		h.log.Warn("channel: a request was refused", "channel", b.Name, "status", status, "error", err)
		httpError(w, status, err.Error())
		return
	}
	h.ignored.Add(int64(got.Ignored))
	ctx := session.WithTenant(r.Context(), h.tenant())
	// Attachments are downloaded until two thirds of the platform's
	// patience are spent; the rest follow the answer.
	hurry := start.Add(b.ackWithin() * 2 / 3)
	for _, m := range got.Messages {
		if err := h.take(ctx, b, m, hurry); err != nil {
			// The platform tries again; what was stored is one input.
			h.log.Error("channel: a message could not be stored", "channel", b.Name, "message", m.ID, "error", err)
			httpError(w, http.StatusServiceUnavailable, "the message could not be stored: try again")
			return
		}
	}
	for _, c := range got.Clicks {
		h.click(ctx, b, c)
	}
	if res := got.Response; res != nil {
		if res.ContentType != "" {
			w.Header().Set("Content-Type", res.ContentType)
		}
		w.WriteHeader(cmp.Or(res.Status, http.StatusOK))
		_, _ = w.Write(res.Body)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// allowed reports whether a sender in a conversation may talk to b's
// agent.
func (b *Binding) allowed(sender, conversation string) bool {
	return len(b.Allow) == 0 || slices.Contains(b.Allow, sender) || slices.Contains(b.Allow, conversation)
}

// take stores a person's message as an input of its conversation's source
// (the platform's message id its key); a sender not allowed is refused.
// A message to a session that waits on a prompt answers it when the
// gateway's Prompts says so for the channel's sources (agentrt serve's
// default): the gateway owns what an input does to a session.
func (h *Hub) take(ctx context.Context, b *Binding, m Inbound, hurry time.Time) error {
	to := Address{Conversation: m.Conversation, Thread: m.Thread}
	if !b.allowed(m.Sender, m.Conversation) {
		h.refused.Add(1)
		h.log.Info("channel: a sender who is not allowed", "channel", b.Name, "sender", m.Sender, "conversation", m.Conversation)
		if b.Refusal != "" {
			h.background(func(ctx context.Context) error {
				_, err := b.Channel.Send(ctx, to, Message{Text: b.Refusal, Key: "refusal-" + m.ID})
				return err
			})
		}
		return nil
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Attachments) == 0 {
		h.ignored.Add(1)
		return nil
	}
	h.received.Add(1)
	source := Source(b.Name, to)
	dctx, cancel := context.WithDeadline(ctx, hurry)
	files, note, late := h.download(dctx, b, m.Attachments)
	cancel()
	if len(late) > 0 {
		names := make([]string, len(late))
		for i, a := range late {
			names[i] = cmp.Or(a.Name, a.Type, "a file")
		}
		note = strings.TrimSpace(note + "\n[" + strings.Join(names, ", ") + ": still downloading; it follows.]")
	}
	text := m.Text
	if note != "" {
		text = strings.TrimSpace(text + "\n\n" + note)
	}
	meta := map[string]string{"channel": b.Name, gateway.MetaSender: m.Sender, gateway.MetaSenderName: m.SenderName}
	follow := int64(-1) // where the follow of the message's turn starts; -1: none
	if b.follows() {
		if sid, err := h.cfg.Gateway.SessionOf(source); err == nil {
			if follow, err = h.followFrom(ctx, sid, b.Agent); err != nil {
				h.log.Warn("channel: a conversation's turn cannot be followed", "channel", b.Name, "session", sid, "error", err)
				follow = -1
			}
		}
	}
	sub, err := h.cfg.Gateway.Submit(ctx, gateway.Input{Source: source, Agent: b.Agent, Text: text, Key: m.ID, Files: files, Metadata: meta})
	if len(late) > 0 && (err == nil || agentrt.AsError(err).ErrorCode() == agentrt.CodeKeyConflict) {
		h.fetchLate(b, source, m.ID, meta, late)
	}
	if err != nil {
		if e := agentrt.AsError(err); e.Code == agentrt.CodeKeyConflict {
			// The platform's id names one message: its retry whose
			// attachments came out otherwise (one downloaded now that was
			// not then) is the message stored.
			h.duplicates.Add(1)
			return nil
		}
		if e := agentrt.AsError(err); e.Kind == agentrt.FailInput {
			// Refused for good (a full inbox, a reject policy): the
			// platform must not send it again; the person is told.
			h.log.Warn("channel: a message was refused", "channel", b.Name, "source", source, "error", err)
			h.background(func(ctx context.Context) error {
				_, err := b.Channel.Send(ctx, to, Message{Text: "Sorry, that message could not be taken: " + e.Msg, Key: "refused-" + m.ID})
				return err
			})
			return nil
		}
		return err
	}
	if sub.Duplicate {
		h.duplicates.Add(1)
		return nil
	}
	if follow >= 0 {
		h.follow(b, to, sub.Session, follow)
	}
	return nil
}

// fetchLate downloads, after the platform's answer, the attachments of
// message id that took longer than it waits, and stores them as an input
// of their own (key id#files: the platform's retry of the message stores
// them once), which the conversation's debounce and policy merge with the
// message's turn.
func (h *Hub) fetchLate(b *Binding, source, id string, meta map[string]string, late []Attachment) {
	tenant := h.tenant()
	h.wg.Go(func() {
		ctx, cancel := context.WithTimeout(session.WithTenant(h.life, tenant), lateFor)
		defer cancel()
		files, note, _ := h.download(ctx, b, late)
		if len(files) == 0 && note == "" {
			return
		}
		_, err := h.cfg.Gateway.Submit(ctx, gateway.Input{Source: source, Agent: b.Agent, Text: note, Key: id + "#files", Files: files, Metadata: meta})
		if err != nil && agentrt.AsError(err).ErrorCode() != agentrt.CodeKeyConflict {
			h.log.Error("channel: a message's late attachments could not be stored", "channel", b.Name, "message", id, "error", err)
		}
	})
}

// lateFor bounds the download of a message's late attachments.
const lateFor = 5 * time.Minute

// download fetches a message's attachments with the platform's auth and
// the hub's limit (MaxFileBytes each); one that cannot be had (too large,
// not found, a channel that cannot download) is named in note, for the
// turn to know it was sent, rather than refusing the message. Those not
// fetched when ctx ended are late.
func (h *Hub) download(ctx context.Context, b *Binding, atts []Attachment) (files []gateway.File, note string, late []Attachment) {
	if len(atts) == 0 {
		return nil, "", nil
	}
	d, ok := b.Channel.(Downloader)
	var missed []string
	for _, a := range atts {
		name := cmp.Or(a.Name, a.Type, "a file")
		switch {
		case !ok:
			missed = append(missed, name+" (this channel does not download files)")
			continue
		case a.Size > h.cfg.MaxFileBytes:
			missed = append(missed, fmt.Sprintf("%s (%d bytes: more than the %d taken)", name, a.Size, h.cfg.MaxFileBytes))
			continue
		}
		if ctx.Err() != nil {
			late = append(late, a)
			continue
		}
		data, typ, err := d.Download(ctx, a, h.cfg.MaxFileBytes)
		if err != nil && ctx.Err() != nil {
			late = append(late, a)
			continue
		}
		if err != nil {
			h.log.Warn("channel: an attachment could not be downloaded", "channel", b.Name, "file", name, "error", err)
			missed = append(missed, name+" (could not be downloaded: "+err.Error()+")")
			continue
		}
		files = append(files, gateway.File{Name: a.Name, Type: cmp.Or(a.Type, typ, http.DetectContentType(data)), Data: data})
	}
	if len(missed) > 0 {
		note = "[The person also sent: " + strings.Join(missed, "; ") + ".]"
	}
	return files, note, late
}

// click answers the question a button was for, when its presser may.
func (h *Hub) click(ctx context.Context, b *Binding, c Click) {
	ack := func(text string) {
		if a, ok := b.Channel.(Acknowledger); ok {
			h.background(func(ctx context.Context) error { return a.Acknowledge(ctx, c, text) })
		}
	}
	may := b.allowed(c.Sender, c.Conversation)
	if len(b.Approvers) > 0 {
		may = slices.Contains(b.Approvers, c.Sender)
	}
	if !may {
		h.refused.Add(1)
		h.log.Warn("channel: a press by someone who may not decide", "channel", b.Name, "sender", c.Sender)
		ack("You may not decide this.")
		return
	}
	rid, res, err := decodeButton(c.Data)
	if err != nil {
		h.ignored.Add(1)
		ack("")
		return
	}
	res.By = b.Name + ":" + c.Sender
	sid, err := h.cfg.Gateway.SessionOf(Source(b.Name, Address{Conversation: c.Conversation, Thread: c.Thread}))
	if err != nil {
		ack("")
		return
	}
	if len(res.Selected) == 1 && strings.HasPrefix(res.Selected[0], "#") {
		if res.Selected[0], err = h.option(ctx, sid, rid, res.Selected[0][1:]); err != nil {
			h.duplicates.Add(1)
			ack("This was decided already.")
			return
		}
	}
	_, err = h.cfg.Runner.ResolveAndContinue(ctx, sid, rid, res)
	switch {
	case err == nil:
		h.received.Add(1)
		ack("Done.")
	case agentrt.AsError(err).ErrorCode() == agentrt.CodeAlreadyResolved:
		h.duplicates.Add(1)
		ack("This was decided already.")
	default:
		h.log.Warn("channel: a press could not be answered", "channel", b.Name, "session", sid, "request", rid, "error", err)
		ack("That could not be done: " + agentrt.AsError(err).Msg)
	}
}

// option is the option of index i (text) of a pending selection.
func (h *Hub) option(ctx context.Context, sid, rid, i string) (string, error) {
	n, err := strconv.Atoi(i)
	if err != nil {
		return "", err
	}
	reqs, err := h.cfg.Runner.PendingRequests(ctx, session.RequestListOptions{SessionID: sid, Limit: 100})
	if err != nil {
		return "", err
	}
	for _, p := range reqs {
		if p.Request.RequestID == rid && n >= 0 && n < len(p.Request.Options) {
			return p.Request.Options[n], nil
		}
	}
	return "", fmt.Errorf("no pending selection %s with an option %d", rid, n)
}

// background runs fn (a send beside the request's answer) with a
// deadline of its own, joined by Close.
func (h *Hub) background(fn func(ctx context.Context) error) {
	h.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := fn(ctx); err != nil {
			h.log.Warn("channel: a send beside a request failed", "error", err)
		}
	})
}

// Close stops following turns and waits for the sends the hub made
// beside requests' answers and for the downloads after them.
func (h *Hub) Close() {
	h.end()
	h.wg.Wait()
}

// Counts are the hub's counts since it started.
type Counts struct {
	Received, Refused, Ignored, Duplicates, Delivered, Retried, Failed int64
}

// Counts returns what the hub has counted.
func (h *Hub) Counts() Counts {
	return Counts{Received: h.received.Load(), Refused: h.refused.Load(), Ignored: h.ignored.Load(), Duplicates: h.duplicates.Load(),
		Delivered: h.delivered.Load(), Retried: h.retried.Load(), Failed: h.failed.Load()}
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg}})
}
