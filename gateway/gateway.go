// Package gateway is the one way input enters a session from the outside
// world: a transport turns what it received into an Input and Submits it;
// the input is stored in the store's durable inbox before Submit returns;
// the gateway's loop (Run) coalesces each source's pending inputs into one
// turn, waits for a source to settle (debounce), runs the turn through the
// module pipeline — the agent's run is one module — and, when input comes
// for a source whose turn is running, applies the source's policy:
// interrupt the turn and restart it with the merged input, queue the input
// for the next turn, or reject it.
//
// A support bot on a chat channel: a person types "hi", "I need a refund"
// and "order 42" within two seconds, then "sorry, 43" while the agent
// works. With a debounce of a few seconds the first three make one turn;
// the fourth interrupts it (the model call in flight is abandoned, a tool
// call already made keeps its result), and the turn restarts with "sorry,
// 43" after the rest: the agent answers once, to all of it.
//
// Every input is answered exactly once, across processes and crashes: the
// turn that answers it marks it answered in the commit that starts the
// turn (session.Commit.Answers).
package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/stack"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Policy is what the gateway does with input for a source whose turn is
// running.
type Policy string

// Policies.
const (
	// Interrupt stops the running turn at its next safe point and
	// restarts it from the head of the module pipeline with the merged
	// input (the default).
	Interrupt Policy = "interrupt"
	// Queue lets the running turn finish; the next turn answers every
	// input that came meanwhile, merged.
	Queue Policy = "queue"
	// Reject refuses the input: Submit returns an error (code
	// input_rejected) and the input is kept, refused, in the inbox.
	Reject Policy = "reject"
	// Steer abandons nothing: the input is given to the model at its next
	// call in the running turn (after the current tool batch), recorded
	// as input_steered. Input the turn makes no more model calls for, or
	// for a turn running in another process, waits for the next turn.
	Steer Policy = "steer"
)

// Input is what a transport received from a source.
type Input struct {
	// Source names where the input came from (a chat channel, a user);
	// required. A source's inputs are answered in order.
	Source string
	// Session is the session the input goes to; empty: the gateway's
	// rule (Config.SessionFor), else the source's name.
	Session string
	// Agent is the agent of a session the input creates; empty: the
	// runner's default agent.
	Agent string
	// Text is a text part; Parts are the input's other parts (text, JSON
	// data), after Text.
	Text  string
	Parts []session.InputPart
	// Metadata goes with the input (the newest input's wins when inputs
	// merge).
	Metadata map[string]string
	// Key, when set, makes the submission idempotent: the same key from
	// the same source is stored once, however often and from however many
	// processes it is submitted; the same key with other content is an
	// error. At most MaxKeyBytes long.
	Key string
	// Files are images and files that come with the input: each is kept
	// once in the store's blobs (session.Blobs) and the input holds a
	// part of type media naming it; the turn's user message has them,
	// for the models that take them (agentrt.Input.Media). At most
	// Config.MaxFileBytes each and MaxInputFileBytes in all.
	Files []File
	// ClientTools are tools the sender runs itself (agentrt.Input's): the
	// turn offers them to the model and hands their calls back as
	// client_tool requests. They travel with the input, in its metadata
	// (key agentrt.client_tools), so a turn run later or elsewhere has them.
	ClientTools []model.ToolSpec
}

// File is an image or a file of an input: its bytes, media type and
// name.
type File struct {
	Name string
	Type string
	Data []byte
}

// MediaPart is the part of type media naming a kept blob: its data is m,
// as JSON.
func MediaPart(m model.Media) session.InputPart {
	b, _ := json.Marshal(m)
	return session.InputPart{Type: "media", Data: b}
}

// Submitted is a stored input.
type Submitted struct {
	ID        string `json:"id"`
	Source    string `json:"source"`
	Session   string `json:"session"`
	Seq       int64  `json:"seq"`
	Duplicate bool   `json:"duplicate,omitempty"` // its key was submitted before: this is that input
	// RunID is the run that answered it, for a duplicate answered already.
	RunID string `json:"run_id,omitempty"`

	agent string // the input's agent, for the settings that apply to it
}

// SourceConfig overrides the gateway's settings for one source (or the
// sources of one agent): a zero field keeps what it overrides.
type SourceConfig struct {
	Debounce        time.Duration
	MaxWait         time.Duration
	Policy          Policy
	MaxPending      int
	MaxPendingBytes int
	MaxRestarts     int
	// Prompts is what a turn does when its session waits on a prompt (a
	// question answered in words): PromptsAnswer answers it with the
	// turn's text; "" (PromptsPolicy) leaves the waiting run to Policy.
	Prompts Prompts
}

// Prompts says what a source's turn does to a session that waits on a
// prompt.
type Prompts string

const (
	// PromptsPolicy leaves a waiting session to the source's Policy, as
	// for any busy session (interrupt: the question is dropped and the
	// turn starts over with the input).
	PromptsPolicy Prompts = "policy"
	// PromptsAnswer answers the session's oldest pending prompt with the
	// turn's text — a person on a chat answers a question by writing —
	// and the run goes on from it. The inputs are marked answered in the
	// resolution's commit, so a platform's retry of the message is the
	// same input, and answers once. A turn that brings files, or a
	// session that waits on no prompt (an approval, a selection), is left
	// to Policy.
	PromptsAnswer Prompts = "answer"
)

// Config configures a Gateway. Zero values mean defaults.
type Config struct {
	// Runner runs the turns; required. Its store must keep an inbox
	// (session.Inbox).
	Runner *agentrt.Runner
	// Debounce is how long a source must stay quiet before its turn
	// starts; zero starts at once. MaxWait bounds the wait from a
	// source's first pending input (zero: 10 × Debounce).
	Debounce time.Duration
	MaxWait  time.Duration
	// Policy for input to a source whose turn runs; "" means Interrupt.
	Policy Policy
	// MaxPending and MaxPendingBytes bound what one source piles up: the
	// inputs waiting for its turn, and their size (InboxInput.Size) —
	// what its next turn merges. An input that would go past either is
	// refused at Submit (code source_full) and not stored. A turn takes
	// at most that much too: the rest waits for the turn after, also
	// when submits from several processes at once went past the bound
	// (Submit counts what is stored, and does not lock the source).
	// Zero: DefaultMaxPending, and 8 × MaxInputBytes.
	MaxPending      int
	MaxPendingBytes int
	// MaxRestarts bounds how often newer input restarts one turn (the
	// interrupt policy): past it, newer input for that turn is queued,
	// answered by the turn after (Turn.Queued says which). Zero:
	// DefaultMaxRestarts.
	MaxRestarts int
	// Prompts is what a turn does to a session that waits on a prompt;
	// "": PromptsPolicy.
	Prompts Prompts
	// Agents overrides Debounce, MaxWait, Policy and the bounds above for
	// the sources whose session belongs to an agent (the input's Agent,
	// else the runner's default agent); Sources, per source, over that (a
	// zero field keeps what it overrides).
	Agents  map[string]SourceConfig
	Sources map[string]SourceConfig
	// Prefixes overrides, per prefix of a source's name, what Agents
	// says for the sources that start with it (a channel's "NAME:", whose
	// conversations are its sources), and Sources overrides it in turn;
	// the longest prefix that matches applies.
	Prefixes map[string]SourceConfig
	// SessionFor maps a source to its session when an Input names none;
	// nil: the session is named after the source. An error refuses the
	// input (code unknown_source).
	SessionFor func(source string) (string, error)
	// Merge merges a turn's inputs; nil: DefaultMerge.
	Merge Merger
	// Modules run each turn, by Order (see Module); the agent's run is a
	// module of Order AgentOrder, added unless Modules has one named
	// "agent".
	Modules []Module
	// Workers bounds the sources served at once — the turns running at
	// once; zero: DefaultWorkers. A turn mostly waits on its model, so
	// the bound is memory (some 40 KB a turn with its stream open), not
	// CPU; the model provider's rate limits are the usual real bound.
	// Sources past it wait for a free worker (Waiting, OnFull).
	Workers int
	// OnFull, when set, hears that sources with pending inputs wait for
	// a free worker: how many workers are busy and how many sources
	// waited in Run's last look. At most once a FullNoticeEvery.
	OnFull func(busy, waiting int)
	// MaxInputBytes bounds an input's content; zero: 1 MiB.
	MaxInputBytes int
	// MaxFileBytes bounds a file of an input (Input.Files), and
	// MaxInputFileBytes all of them; zero: DefaultMaxFileBytes and
	// DefaultMaxInputFileBytes.
	MaxFileBytes, MaxInputFileBytes int64
	// Poll is how often Run looks at the inbox for inputs it was not told
	// of (submitted by other processes, or stored before a restart);
	// zero: 200 ms.
	Poll time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// OnError, when set, hears of failures nobody's call returns: a turn
	// that failed (its inputs set aside), an inbox that could not be read.
	OnError func(source string, err error)
	// NewID makes input ids; nil: the runner's kind of random ids.
	NewID func() string
	// ShutdownGrace is how long, once Run's context has ended (or an
	// Answer's caller's), a module still running is waited for before it
	// is abandoned: it ignores its context, and nothing else can stop it.
	// Its own time limit (Timeouter) abandons it sooner. Zero:
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// FollowPoll is how often a Following reads its input's stored state
	// while no run has taken it (or while its turn waits for a restart),
	// to see a refusal by another process's gateway; one by this process
	// is seen at once. Zero: DefaultFollowPoll.
	FollowPoll time.Duration
}

// Defaults.
const (
	DefaultWorkers       = 10000
	FullNoticeEvery      = time.Minute
	DefaultMaxInputBytes = 1 << 20
	// DefaultMaxFileBytes and DefaultMaxInputFileBytes bound an input's
	// files: 20 MiB one, 50 MiB all (what the model APIs take, about).
	DefaultMaxFileBytes      = 20 << 20
	DefaultMaxInputFileBytes = 50 << 20
	DefaultPoll              = 200 * time.Millisecond
	DefaultShutdownGrace     = 10 * time.Second
	DefaultMaxPending        = 32
	DefaultMaxRestarts       = 5
)

// MaxKeyBytes bounds an input's idempotency key (Input.Key): the key is
// stored with the input and in the inbox's unique index, so a client
// could otherwise make every row of it as large as its body.
const MaxKeyBytes = 256

// Gateway submits inputs to the inbox and runs the turns that answer
// them. Its methods are safe for concurrent use.
type Gateway struct {
	cfg    Config
	r      *agentrt.Runner
	inbox  session.Inbox
	merge  Merger
	groups [][]Module // by Order, ascending
	now    func() time.Time
	newID  func() string

	wake     chan struct{} // a local Submit: look at the inbox now
	nextLook atomic.Int64  // when Run's loop looks at the inbox next (unix ns; 0: not running; MaxInt64: looking now)

	mu      sync.Mutex
	serving map[skey]*serving  // sources with a worker; guarded by mu
	backoff map[skey]time.Time // sources whose session runs elsewhere: not before; guarded by mu
	running bool               // Run is running; guarded by mu
	// While Run takes work: its context, and its workers, to which
	// Submit hands a source that can start at once. Guarded by mu.
	runCtx  context.Context
	workers *sync.WaitGroup
	// starved says Run's loop left a settled source waiting because every
	// worker was busy: the next worker to end wakes it. Guarded by mu.
	starved bool
	// fullNoticed is when OnFull was last called. Guarded by mu.
	fullNoticed time.Time

	// waiting is how many sources with pending inputs Run's last look
	// left waiting for a free worker.
	waiting atomic.Int64
	left    map[skey]bool // those sources; guarded by mu

	// abandoned counts the modules' goroutines left running after their
	// turn gave up on them (see runModule).
	abandoned atomic.Int64

	// changes wakes the followers of inputs (Following) when this
	// process refuses inputs.
	changes changes
}

// skey names a source: its tenant and name.
type skey struct{ tenant, source string }

// serving is a source a worker serves; the Gateway's mu guards it.
type serving struct {
	turn        *Turn                // the turn that runs, nil between turns
	run         *agentrt.Run         // the turn's agent run, while it runs
	interrupted bool                 // newer input interrupted the turn
	interruptBy []string             // the inputs that did
	steer       []session.InboxInput // input to steer into the run once it starts
	// recheck says Run's loop found input for the source while it was
	// served: the worker wakes the loop when it ends, should the input
	// have come after its last look.
	recheck bool
	// upto is the Seq of the newest input pending when the turn started
	// (zero before the first turn): input up to it is not newer input the
	// policy applies to — the turn's own, or left to a later turn for its
	// session.
	upto int64
	// looked is the Seq of the newest input the inbox watch has seen
	// during the turn (look): the next look reads after it.
	looked int64
	// foreign is the store's count of other processes' writes
	// (session.Foreign) at the watch's last look that read the inbox
	// (lookAnyway when the turn starts: its first look reads): a look
	// skips its read while it is the same (no other process can have
	// submitted input since).
	foreign int64
	// applied holds the newer inputs the source's policy was applied to
	// during the turn (whether they were submitted here, or seen in the
	// inbox, submitted by another process).
	applied map[string]bool
}

// New returns a Gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.Runner == nil {
		return nil, errors.New("gateway: Config.Runner is required")
	}
	inbox, ok := cfg.Runner.Store().(session.Inbox)
	if !ok {
		return nil, fmt.Errorf("gateway: the store (%T) keeps no inbox (session.Inbox)", cfg.Runner.Store())
	}
	switch {
	case cfg.Debounce < 0, cfg.MaxWait < 0, cfg.Workers < 0, cfg.MaxInputBytes < 0, cfg.Poll < 0, cfg.ShutdownGrace < 0,
		cfg.MaxPending < 0, cfg.MaxPendingBytes < 0, cfg.MaxRestarts < 0:
		return nil, errors.New("gateway: durations and bounds must not be negative")
	}
	if err := checkPolicy(cfg.Policy, cfg.Prompts); err != nil {
		return nil, err
	}
	for what, m := range map[string]map[string]SourceConfig{"source": cfg.Sources, "agent": cfg.Agents, "prefix": cfg.Prefixes} {
		for name, sc := range m {
			if err := checkPolicy(sc.Policy, sc.Prompts); err != nil {
				return nil, fmt.Errorf("gateway: %s %q: %w", what, name, err)
			}
			if sc.Debounce < 0 || sc.MaxWait < 0 || sc.MaxPending < 0 || sc.MaxPendingBytes < 0 || sc.MaxRestarts < 0 {
				return nil, fmt.Errorf("gateway: %s %q: durations and bounds must not be negative", what, name)
			}
		}
	}
	g := &Gateway{cfg: cfg, r: cfg.Runner, inbox: inbox, merge: cfg.Merge,
		now: cfg.Now, newID: cfg.NewID, wake: make(chan struct{}, 1), serving: make(map[skey]*serving), backoff: make(map[skey]time.Time)}
	if g.merge == nil {
		g.merge = DefaultMerge{}
	}
	if g.cfg.Workers == 0 {
		g.cfg.Workers = DefaultWorkers
	}
	if g.cfg.MaxInputBytes == 0 {
		g.cfg.MaxInputBytes = DefaultMaxInputBytes
	}
	if g.cfg.Poll == 0 {
		g.cfg.Poll = DefaultPoll
	}
	if g.cfg.MaxPending == 0 {
		g.cfg.MaxPending = DefaultMaxPending
	}
	if g.cfg.MaxPendingBytes == 0 {
		g.cfg.MaxPendingBytes = 8 * g.cfg.MaxInputBytes
	}
	if g.cfg.MaxRestarts == 0 {
		g.cfg.MaxRestarts = DefaultMaxRestarts
	}
	// An input the gateway takes must fit in what a source may pile up.
	tooLow := func(n int) bool { return n != 0 && n < g.cfg.MaxInputBytes }
	if tooLow(g.cfg.MaxPendingBytes) {
		return nil, fmt.Errorf("gateway: MaxPendingBytes (%d) is below MaxInputBytes (%d)", g.cfg.MaxPendingBytes, g.cfg.MaxInputBytes)
	}
	for what, m := range map[string]map[string]SourceConfig{"source": cfg.Sources, "agent": cfg.Agents} {
		for name, sc := range m {
			if tooLow(sc.MaxPendingBytes) {
				return nil, fmt.Errorf("gateway: %s %q: MaxPendingBytes (%d) is below MaxInputBytes (%d)", what, name, sc.MaxPendingBytes, g.cfg.MaxInputBytes)
			}
		}
	}
	if g.cfg.ShutdownGrace == 0 {
		g.cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if g.cfg.FollowPoll <= 0 {
		g.cfg.FollowPoll = DefaultFollowPoll
	}
	if g.newID == nil {
		g.newID = cfg.Runner.NewID
	}
	if g.now == nil {
		g.now = time.Now
	}
	groups, err := groupModules(cfg.Modules)
	if err != nil {
		return nil, err
	}
	g.groups = groups
	return g, nil
}

func checkPolicy(p Policy, pr Prompts) error {
	switch pr {
	case "", PromptsPolicy, PromptsAnswer:
	default:
		return fmt.Errorf("gateway: prompts %q is not answer or policy", pr)
	}
	switch p {
	case "", Interrupt, Queue, Reject, Steer:
		return nil
	}
	return fmt.Errorf("gateway: policy %q is not interrupt, queue, steer or reject", p)
}

// settings returns the settings of source, whose inputs go to a session
// of agent ("": the default agent): the gateway's, under its agent's,
// under its own, with the defaults filled in.
func (g *Gateway) settings(source, agent string) SourceConfig {
	over := func(s, sc SourceConfig) SourceConfig {
		return SourceConfig{Debounce: cmp.Or(sc.Debounce, s.Debounce), MaxWait: cmp.Or(sc.MaxWait, s.MaxWait),
			Policy: cmp.Or(sc.Policy, s.Policy), MaxPending: cmp.Or(sc.MaxPending, s.MaxPending),
			MaxPendingBytes: cmp.Or(sc.MaxPendingBytes, s.MaxPendingBytes), MaxRestarts: cmp.Or(sc.MaxRestarts, s.MaxRestarts),
			Prompts: cmp.Or(sc.Prompts, s.Prompts)}
	}
	s := SourceConfig{Debounce: g.cfg.Debounce, MaxWait: g.cfg.MaxWait, Policy: g.cfg.Policy,
		MaxPending: g.cfg.MaxPending, MaxPendingBytes: g.cfg.MaxPendingBytes, MaxRestarts: g.cfg.MaxRestarts, Prompts: g.cfg.Prompts}
	if len(g.cfg.Agents) > 0 {
		if agent == "" {
			agent, _ = g.r.DefaultAgent()
		}
		if sc, ok := g.cfg.Agents[agent]; ok {
			s = over(s, sc)
		}
	}
	best := -1
	var prefixed SourceConfig
	for p, sc := range g.cfg.Prefixes {
		if len(p) > best && strings.HasPrefix(source, p) {
			best, prefixed = len(p), sc
		}
	}
	if best >= 0 {
		s = over(s, prefixed)
	}
	if sc, ok := g.cfg.Sources[source]; ok {
		s = over(s, sc)
	}
	if s.MaxWait == 0 {
		s.MaxWait = 10 * s.Debounce
	}
	s.Policy = cmp.Or(s.Policy, Interrupt)
	return s
}

// readLimit is how many of source's pending inputs its worker reads at
// once: the most any of its settings lets one turn take.
func (g *Gateway) readLimit(source string) int {
	n := g.cfg.MaxPending
	for _, sc := range g.cfg.Agents {
		n = max(n, sc.MaxPending)
	}
	return max(n, g.cfg.Sources[source].MaxPending)
}

// Submit stores in in its source's inbox and returns at once: the input
// is durable when Submit returns, and the gateway's loop (in this process
// or any other on the same store) answers it. Input for a source whose
// turn is running in this process is dealt with by the source's policy
// at once (an interrupt, or a refusal).
func (g *Gateway) Submit(ctx context.Context, in Input) (*Submitted, error) {
	parts := in.Parts
	if in.Text != "" {
		parts = append([]session.InputPart{{Type: "text", Text: in.Text}}, parts...)
	}
	if err := g.check(in, parts); err != nil {
		return nil, err
	}
	sess, err := g.sessionOf(in)
	if err != nil {
		return nil, err
	}
	files, err := g.keepFiles(ctx, in)
	if err != nil {
		return nil, err
	}
	parts = append(parts, files...)
	meta := in.Metadata
	if in.Agent != "" {
		meta = cloneMeta(meta)
		meta[agentKey] = in.Agent
	}
	if len(in.ClientTools) > 0 {
		if err := g.checkClientTools(ctx, sess, in); err != nil {
			return nil, err
		}
		b, err := json.Marshal(in.ClientTools)
		if err != nil {
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadClientTools,
				Msg: fmt.Sprintf("the input from source %s: client tools: %v", in.Source, err)}
		}
		if in.Agent == "" {
			meta = cloneMeta(meta)
		}
		meta[clientToolsKey] = string(b)
	}
	rec := &session.InboxInput{ID: "in_" + g.newID(), Source: in.Source, SessionID: sess, Parts: parts,
		Metadata: meta, Key: in.Key, Digest: digest(sess, parts, meta)}
	stored, dup, err := g.store(ctx, rec, in.Agent)
	if err != nil {
		var full *session.FullError
		if errors.As(err, &full) {
			return nil, sourceFull(in.Source, full, int64(rec.Size()))
		}
		if errors.Is(err, session.ErrConflict) {
			// The store's error is not the caller's to read: its
			// ErrConflict says "changed concurrently", and it names the
			// store. The code says what happened.
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeKeyConflict,
				Msg: fmt.Sprintf("key %q of source %s was given to another input before; send new content with a new key", in.Key, in.Source)}
		}
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "store the input", Err: err}
	}
	out := &Submitted{ID: stored.ID, Source: stored.Source, Session: stored.SessionID, Seq: stored.Seq, Duplicate: dup,
		agent: stored.Metadata[agentKey]}
	if dup {
		out.RunID = stored.RunID
	}
	if dup {
		if stored.State == session.InputRefused {
			// The same input again: the same answer. A client that retries
			// a refused input hears it was refused, not that it was taken.
			return out, refusedErr(stored)
		}
		return out, nil
	}
	if err := g.arrived(ctx, stored); err != nil {
		return out, err
	}
	// An idle source whose input need not wait goes straight to a
	// worker. Else wake the loop, unless it looks at the inbox again
	// before the input can settle anyway: a busy source's every input
	// would otherwise make the loop list the inbox once more.
	debounce := g.settings(stored.Source, stored.Metadata[agentKey]).Debounce
	if debounce <= 0 && g.dispatch(skey{stored.Tenant, stored.Source}) {
		return out, nil
	}
	if debounce <= 0 || stored.At.Add(debounce).UnixNano() < g.nextLook.Load() {
		g.poke()
	}
	return out, nil
}

// store stores in, an input for a session of agent, unless its source
// has as many inputs, or bytes, waiting as its bounds allow
// (MaxPending, MaxPendingBytes): then the error is a *session.FullError.
// A store that bounds its submits (session.BoundedInbox) counts in the
// write that stores the input; for another, the count is a read before
// it, so that submits racing from several processes may go past a bound
// by what is in flight — which the turns then take a bounded turn at a
// time (fit).
func (g *Gateway) store(ctx context.Context, in *session.InboxInput, agent string) (session.InboxInput, bool, error) {
	set := g.settings(in.Source, agent)
	b := session.Bounds{Pending: set.MaxPending, Bytes: int64(set.MaxPendingBytes)}
	if bi, ok := g.inbox.(session.BoundedInbox); ok {
		return bi.SubmitWithin(ctx, in, b)
	}
	st, err := g.inbox.PendingOf(ctx, in.Source)
	if err != nil {
		return session.InboxInput{}, false, err
	}
	if !b.Fits(st.Pending, st.Bytes, int64(in.Size())) {
		full := &session.FullError{Bounds: b, Pending: st.Pending, Bytes: st.Bytes}
		if in.Key == "" {
			return session.InboxInput{}, false, full
		}
		// A retry of an input that waits already is that input.
		waiting, err := g.inbox.Pending(ctx, in.Source, st.Pending)
		if err != nil {
			return session.InboxInput{}, false, err
		}
		if !slices.ContainsFunc(waiting, func(x session.InboxInput) bool { return x.Key == in.Key }) {
			return session.InboxInput{}, false, full
		}
	}
	return g.inbox.Submit(ctx, in)
}

// sourceFull is Submit's refusal of an input of size bytes for source,
// which full says has no room: which bound, and what to do.
func sourceFull(source string, full *session.FullError, size int64) error {
	why := fmt.Sprintf("source %s has %d inputs waiting for its turn, as many as it may (max_pending %d)",
		source, full.Pending, full.Bounds.Pending)
	if full.Bounds.Pending <= 0 || full.Pending < full.Bounds.Pending {
		why = fmt.Sprintf("source %s has %d bytes waiting for its turn, and this input's %d would make more than it may (max_pending_bytes %d)",
			source, full.Bytes, size, full.Bounds.Bytes)
	}
	return &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeSourceFull,
		Msg: why + "; the input was not stored: send it again once its turn has answered them"}
}

// sessionOf is the session in goes to: its own, else the gateway's rule
// for its source (Config.SessionFor), else the source's name.
// SessionOf names the session the inputs of source go to when they name
// none: the source itself, or what Config.SessionFor maps it to.
func (g *Gateway) SessionOf(source string) (string, error) {
	return g.sessionOf(Input{Source: source})
}

func (g *Gateway) sessionOf(in Input) (string, error) {
	sess := in.Session
	if sess == "" {
		sess = in.Source
		if g.cfg.SessionFor != nil {
			s, err := g.cfg.SessionFor(in.Source)
			if err != nil || s == "" {
				return "", &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnknownSource,
					Msg: fmt.Sprintf("source %q maps to no session", in.Source), Err: err}
			}
			sess = s
		}
	}
	if err := session.CheckID(sess); err != nil {
		return "", &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadSessionID,
			Msg: fmt.Sprintf("the input from source %s: %v", in.Source, err)}
	}
	return sess, nil
}

// dispatch starts a worker for source k, as Run's loop would once it
// listed the inbox, if Run takes work in this process, k has no worker
// and no back-off, and a worker is free. The worker claims the source
// and reads its inbox as any does.
func (g *Gateway) dispatch(k skey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.workers == nil || g.runCtx.Err() != nil {
		return false
	}
	if _, busy := g.serving[k]; busy {
		return false
	}
	if until, ok := g.backoff[k]; ok && g.now().Before(until) {
		return false
	}
	if len(g.serving) >= g.cfg.Workers {
		g.starved = true
		return false
	}
	s := &serving{}
	g.serving[k] = s
	delete(g.backoff, k)
	ctx := g.runCtx
	g.workers.Go(func() {
		stack.Presize()
		g.serve(ctx, k, s, serveOpts{})
	})
	return true
}

// agentKey is the metadata key an input's agent travels under.
const agentKey = "agentrt.agent"

// clientToolsKey is the metadata key an input's client tools travel
// under, as a JSON array of model.ToolSpec.
const clientToolsKey = "agentrt.client_tools"

func cloneMeta(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// check reports what makes an input unusable.
func (g *Gateway) check(in Input, parts []session.InputPart) error {
	bad := func(code, format string, args ...any) error {
		return &agentrt.Error{Kind: agentrt.FailInput, Code: code, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(in.Source) == "" {
		return bad(agentrt.CodeUnknownSource, "an input needs a source")
	}
	if len(in.Key) > MaxKeyBytes {
		return bad(agentrt.CodeBadIdempotencyKey, "the input from source %s has an idempotency key of %d bytes; at most %d are taken (a UUID is 36)",
			in.Source, len(in.Key), MaxKeyBytes)
	}
	empty := true
	for i, p := range parts {
		switch p.Type {
		case "text":
			if len(p.Data) > 0 {
				return bad(agentrt.CodeBadPart, "part %d: a text part has text, not data (send the data as a part of type data)", i+1)
			}
			empty = empty && strings.TrimSpace(p.Text) == ""
			empty = empty && strings.TrimSpace(p.Text) == ""
		case "data":
			if !json.Valid(p.Data) {
				return bad(agentrt.CodeBadPart, "part %d: its data is not JSON", i+1)
			}
			empty = false
		case "media":
			var m model.Media
			if err := json.Unmarshal(p.Data, &m); err != nil || session.CheckBlobHash(m.Hash) != nil || m.Type == "" {
				return bad(agentrt.CodeBadPart, "part %d: a media part names a blob: {hash, type, name, size}", i+1)
			}
			empty = false
		default:
			return bad(agentrt.CodeBadPart, "part %d: type %q is not text, data or media", i+1, p.Type)
		}
	}
	var total int64
	for i, f := range in.Files {
		n := int64(len(f.Data))
		total += n
		switch {
		case n == 0:
			return bad(agentrt.CodeBadPart, "file %d (%s) is empty", i+1, f.Name)
		case n > g.maxFile():
			return bad(agentrt.CodeInputTooLarge, "file %d (%s) holds %d bytes; at most %d are taken", i+1, f.Name, n, g.maxFile())
		case total > g.maxFiles():
			return bad(agentrt.CodeInputTooLarge, "the input's files hold more than %d bytes", g.maxFiles())
		}
		if _, err := session.NewBlob(f.Data, f.Type); err != nil {
			return bad(agentrt.CodeBadPart, "file %d (%s): %v", i+1, f.Name, err)
		}
		empty = false
	}
	if empty {
		return bad(agentrt.CodeEmptyInput, "the input from source %s is empty", in.Source)
	}
	if size := (&session.InboxInput{Parts: parts}).Size(); size > g.cfg.MaxInputBytes {
		return bad(agentrt.CodeInputTooLarge, "the input from source %s holds %d bytes; at most %d are taken", in.Source, size, g.cfg.MaxInputBytes)
	}
	return nil
}

func (g *Gateway) maxFile() int64  { return cmp.Or(g.cfg.MaxFileBytes, DefaultMaxFileBytes) }
func (g *Gateway) maxFiles() int64 { return cmp.Or(g.cfg.MaxInputFileBytes, DefaultMaxInputFileBytes) }

// keepFiles keeps in's files in the store's blobs and returns the parts
// naming them.
func (g *Gateway) keepFiles(ctx context.Context, in Input) ([]session.InputPart, error) {
	if len(in.Files) == 0 {
		return nil, nil
	}
	bs, ok := g.r.Store().(session.Blobs)
	if !ok {
		return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadPart,
			Msg: fmt.Sprintf("the store (%T) keeps no blobs: an input cannot bring files", g.r.Store())}
	}
	parts := make([]session.InputPart, 0, len(in.Files))
	for _, f := range in.Files {
		b, err := bs.PutBlob(ctx, f.Data, f.Type)
		if err != nil {
			return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "keep the input's file " + f.Name, Err: err}
		}
		parts = append(parts, MediaPart(model.Media{Hash: b.Hash, Type: b.Type, Name: f.Name, Size: b.Size}))
	}
	return parts, nil
}

// checkClientTools checks in's client tools against the agent that will
// run them (in's agent, else the session's, else the default one), so
// that a declaration its run would refuse is refused to its sender now,
// not set aside once a worker takes it.
func (g *Gateway) checkClientTools(ctx context.Context, sess string, in Input) error {
	name := in.Agent
	if name == "" {
		s, err := g.r.Store().GetSession(ctx, sess)
		switch {
		case err == nil:
			name = s.Agent
		case errors.Is(err, session.ErrNotFound):
			if name, err = g.r.DefaultAgent(); err != nil {
				return err
			}
		default:
			return &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the input's session", Err: err}
		}
	}
	a, ok := g.r.Agent(name)
	if !ok {
		return nil // the run says so (unknown_agent), as for any input
	}
	if err := a.CheckClientTools(in.ClientTools); err != nil {
		return fmt.Errorf("the input from source %s: %w", in.Source, err)
	}
	return nil
}

// digest is the hash of an input's content, which tells a repeated key
// from a conflicting one.
func digest(sess string, parts []session.InputPart, meta map[string]string) string {
	b, _ := json.Marshal(struct {
		S string
		P []session.InputPart
		M map[string]string
	}{sess, parts, meta})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// arrived applies the source's policy to input stored for a source whose
// turn is running in this process.
func (g *Gateway) arrived(ctx context.Context, in session.InboxInput) error {
	k := skey{in.Tenant, in.Source}
	g.mu.Lock()
	s := g.serving[k]
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	return g.apply(ctx, k, s, in)
}

// apply applies the source's policy to in, newer input for source k,
// which s serves, unless s runs no turn now, the turn answers in already
// (its worker started as the input was stored: the input is its own), in
// is for another session than the turn's (a later turn answers it), or
// the policy was applied to it before.
func (g *Gateway) apply(ctx context.Context, k skey, s *serving, in session.InboxInput) error {
	g.mu.Lock()
	if g.serving[k] != s || s.turn == nil || in.Seq <= s.upto || s.applied[in.ID] || in.SessionID != s.turn.Session {
		g.mu.Unlock()
		return nil
	}
	if s.applied == nil {
		s.applied = make(map[string]bool)
	}
	s.applied[in.ID] = true
	g.mu.Unlock()
	set := g.settings(in.Source, in.Metadata[agentKey])
	policy := set.Policy
	g.mu.Lock()
	t := s.turn
	g.mu.Unlock()
	if policy == Interrupt && t != nil && t.Restart >= set.MaxRestarts {
		// The turn restarted as often as it may: the input waits for
		// the turn after, and the turn says why (Turn.Queued).
		policy = Queue
		t.queue(in.ID)
	}
	switch decide(policy, turnHere) {
	case actReject:
		if err := g.inbox.Refuse(ctx, []string{in.ID}, agentrt.CodeInputRejected+": the source's turn was running (policy reject)"); err != nil {
			return &agentrt.Error{Kind: agentrt.FailStore, Msg: "refuse the input", Err: err}
		}
		g.changes.signal(in.ID)
		return &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeInputRejected,
			Msg: fmt.Sprintf("source %s's turn is running, and its policy rejects input meanwhile; send it again once the turn is over", in.Source)}
	case actInterrupt:
		g.interrupt(k, s, in.ID)
	case actSteer:
		// The turn's own run, once the worker has recorded it (track), or
		// the session's active run if it is of this turn (it may run
		// before the worker records it, and end before then: track would
		// come too late); else the input waits with the turn, and track
		// gives it to the run. (Not any active run: before track that may
		// be another source's, or a person's.)
		g.mu.Lock()
		h := s.run
		g.mu.Unlock()
		if h == nil && t != nil {
			if a, ok := g.r.Active(ctx, t.Session); ok && a.TurnID() == t.ID {
				h = a
			}
		}
		text := g.merge.Merge([]session.InboxInput{in}).Text
		if h != nil {
			h.Steer(text, []string{in.ID}) // false: the run ended; the next turn answers it
			break
		}
		g.mu.Lock()
		h = s.run // track may have come meanwhile
		if h == nil {
			s.steer = append(s.steer, in)
		}
		g.mu.Unlock()
		if h != nil {
			h.Steer(text, []string{in.ID})
		}
	}
	return nil
}

// interrupt stops the running turn of source k at its next safe point.
func (g *Gateway) interrupt(k skey, s *serving, by string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.serving[k] != s {
		return
	}
	s.interrupted = true
	s.interruptBy = append(s.interruptBy, by)
	if s.turn != nil {
		s.turn.interrupted.Store(true)
	}
	if s.run != nil {
		s.run.InterruptFor("newer input from source "+k.source, []string{by})
	}
}

// Serving returns how many sources this gateway's workers serve now: a
// source whose turn is done holds nothing (no worker, no state).
func (g *Gateway) Serving() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.serving) + len(g.backoff)
}

// Abandoned returns how many modules this gateway gave up on are still
// running: each ignored its context past its time limit, or past
// Config.ShutdownGrace after its turn was stopped, and its goroutine —
// the one the gateway cannot join — runs until the module returns. A
// number that only grows is a module to fix.
func (g *Gateway) Abandoned() int {
	return int(g.abandoned.Load())
}

// Busy is how many sources have a worker now: the turns running (or
// waiting for their source to settle) in this process.
func (g *Gateway) Busy() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.serving)
}

// Waiting is how many sources with pending inputs Run's last look at
// the inbox (every Config.Poll at most) left waiting because every
// worker was busy (Config.Workers).
func (g *Gateway) Waiting() int { return int(g.waiting.Load()) }

// noteFull records that waiting sources waited for a worker in Run's
// last look, and tells OnFull, at most once a FullNoticeEvery.
func (g *Gateway) noteFull(left map[skey]bool) {
	waiting := len(left)
	g.waiting.Store(int64(waiting))
	g.mu.Lock()
	g.left = left
	if waiting == 0 || g.cfg.OnFull == nil {
		g.mu.Unlock()
		return
	}
	now, busy := g.now(), len(g.serving)
	tell := g.fullNoticed.IsZero() || now.Sub(g.fullNoticed) >= FullNoticeEvery
	if tell {
		g.fullNoticed = now
	}
	g.mu.Unlock()
	if tell {
		g.cfg.OnFull(busy, waiting)
	}
}

// PolicyOf is the policy (the default applied) for input from source to
// a session of agent ("" for the default agent) while its turn runs.
func (g *Gateway) PolicyOf(source, agent string) Policy {
	return cmp.Or(g.Settings(source, agent).Policy, Interrupt)
}

// Settings are the settings that apply to input from source to a session
// of agent ("" for the default agent): the gateway's, overridden by the
// agent's and then the source's.
func (g *Gateway) Settings(source, agent string) SourceConfig { return g.settings(source, agent) }

// SourceStatus is where a source's inputs stand: what the store holds
// pending for it (session.SourceState: how many, how large, since when),
// and what this process's gateway does with it.
type SourceStatus struct {
	session.SourceState
	// Serving: a worker of this process has the source — its turn runs,
	// or it waits for the source to settle (debounce) or for its session.
	Serving bool
	// WaitingForWorker: the last look at the inbox left the source
	// waiting because every worker was busy (Config.Workers): its turn
	// queues in this process.
	WaitingForWorker bool
}

// Source says where source's inputs stand (ctx's tenant). Another
// process's gateway may serve a source this one neither serves nor has
// left waiting: the store's part holds for every process, the rest for
// this one.
func (g *Gateway) Source(ctx context.Context, source string) (SourceStatus, error) {
	st, err := g.inbox.PendingOf(ctx, source)
	if err != nil {
		return SourceStatus{}, err
	}
	k := skey{session.TenantOf(ctx), source}
	g.mu.Lock()
	_, serving := g.serving[k]
	left := g.left[k]
	g.mu.Unlock()
	return SourceStatus{SourceState: st, Serving: serving, WaitingForWorker: left && !serving}, nil
}

// Pending lists the sources with pending inputs, of every tenant.
func (g *Gateway) Pending(ctx context.Context) ([]session.SourceState, error) {
	return g.inbox.PendingSources(ctx, 0)
}
