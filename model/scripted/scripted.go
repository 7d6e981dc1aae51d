// Package scripted provides a deterministic model.Model that plays back a
// script of replies. It is meant for tests, examples and benchmarks of
// agents: the agent under test talks to it exactly as it talks to a real
// provider, through Stream.
//
// A script is a list of replies. A model made by New plays them in order,
// one per model call:
//
//	m := scripted.New("calc",
//		scripted.Reply{ToolCalls: []scripted.Call{
//			scripted.ToolCall("calculator", `{"expression":"2+2"}`),
//		}},
//		scripted.Reply{
//			Text:   "2+2 = 4",
//			Expect: &scripted.Expect{LastToolResultContains: `"result":4`},
//		},
//	)
//
// The model fails loudly when the conversation leaves the script. A call
// beyond the last reply ends its stream with an error wrapping ErrExhausted;
// a request that does not match its reply's Expect ends it with an error
// wrapping ErrUnexpected. Both say what was expected and what was found, so
// a failing agent test reads like a diff.
//
// Scripts can also live in YAML or JSON files; see Parse for the format.
//
// # In order, or by conversation
//
// A model made by New keeps its place in the script in memory: call n
// plays reply n, whatever the request. That suits a test that drives
// one conversation in one process, and calls the model for other ends
// too (a plan, a summary). But a run that stops (for an approval, a
// crash) and goes on in another process meets a model that starts again
// at reply 1.
//
// A model that plays by conversation (ByConversation, and the default of
// a script file) holds no place: it reads it from the request, as a
// model, which is stateless, can. The number of assistant messages in
// the request is the number of replies the conversation has had, so a
// request with k of them gets reply k+1 (counting the replies that
// succeed), in any process, in any turn: a turn of N calls plays replies
// 1 to N, a run resumed after reply k plays reply k+1, and the next turn
// goes on from there. A request that asks for a reply after the script's
// last is beyond the script (ErrExhausted).
//
// A failing reply (Error or ErrorCode) leaves no assistant message, so it
// belongs to the success that follows it, as a failed attempt of the same
// reply: the first call with a given conversation plays the first
// failure, a retry of the same request the next one, and so on to the
// success. The attempts are counted in memory, so in a new process the
// failures play again; failures at the end of the script, with no success
// after them, fail every attempt.
//
// What the conversation is not made of, the rule cannot see: a model call
// with a request of its own (a plan, a compaction summary) and a history
// that compaction shortened count their own assistant messages. A script
// for them plays in order.
//
// # Cost
//
// New turns every reply into its chunks once. A call then costs a lock, the
// iterator closure and the Usage it reports: Stream starts no goroutine and
// copies nothing, so the model adds next to nothing to an agent benchmark.
// By conversation, it also counts the request's messages, and hashes them
// to tell retries apart when a reply may fail. Recording the requests
// means copying them, so it is off unless Record is called.
package scripted

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/model"
)

// Errors wrapped by the errors a Model yields when the conversation leaves
// its script. Test with errors.Is.
var (
	// ErrExhausted: the model was called more times than it has replies.
	ErrExhausted = errors.New("scripted: call beyond the end of the script")
	// ErrUnexpected: a request did not match its reply's Expect.
	ErrUnexpected = errors.New("scripted: request does not match the script")
)

// Reply is one scripted model reply.
type Reply struct {
	// Text is the reply's text.
	Text string
	// ToolCalls are the tool calls the reply makes, in order.
	ToolCalls []Call
	// Chunks is how many streamed pieces Text and each tool call's
	// arguments are split into. Zero or one streams the whole reply as a
	// single chunk, the cheapest path. Above one, the text pieces come
	// first, then the tool calls' pieces interleaved by index (call 0 piece
	// 0, call 1 piece 0, call 0 piece 1, ...), one delta per chunk, so the
	// caller's assembly by index is exercised. Text is split on rune
	// boundaries, so a short text may give fewer pieces.
	Chunks int
	// Delay is how long the model waits before its first chunk. The wait
	// ends early, with ctx's error, when ctx is done.
	Delay time.Duration
	// Usage is reported on the last chunk. Nil reports an estimate: a
	// token per four bytes of the request (input) and of the reply (output).
	Usage *model.Usage
	// FinishReason is reported on the last chunk. Empty means
	// model.FinishToolCalls when the reply calls tools, else model.FinishStop.
	FinishReason model.FinishReason
	// Error, when set, makes the call fail with this error text. Text and
	// tool calls, if any, are streamed first (without usage or finish
	// reason), which simulates a stream that breaks half way.
	Error string
	// ErrorCode, when set, makes the failure a *model.Error with this code
	// (and so recoverable or not as a provider's would be), to test how an
	// agent copes with rate limits, outages and cut streams. RetryAfter is
	// the wait the "provider" asks for.
	ErrorCode  model.ErrorCode
	RetryAfter time.Duration
	// Expect, when set, is checked against the request before anything is
	// streamed.
	Expect *Expect
}

// Call is a scripted tool call.
type Call struct {
	// ID defaults to "call_<reply>_<call>", both counted from 1.
	ID   string
	Name string
	// Arguments is the JSON object passed to the tool: a string, []byte or
	// json.RawMessage holding JSON text, which is sent as written; or any
	// other value, which is encoded with encoding/json. Nil means {}.
	Arguments any
	// Verbatim sends a string or []byte Arguments as written even when it
	// is not a JSON object, to test how an agent copes with malformed
	// arguments. Without it, New rejects such arguments.
	Verbatim bool
}

// ToolCall returns a call of the named tool; args is as Call.Arguments.
func ToolCall(name string, args any) Call {
	return Call{Name: name, Arguments: args}
}

// Expect is what a reply requires of the request it answers. Every set
// field must hold.
type Expect struct {
	// LastUserContains must be part of the text of the request's last user
	// message.
	LastUserContains string
	// LastToolResultContains must be part of the text of the request's last
	// tool message.
	LastToolResultContains string
	// ToolsInclude names tools the request must offer.
	ToolsInclude []string
}

// Model plays back a script. Its methods may be called concurrently; each
// Stream call that is ranged over takes a reply: the next one, or, by
// conversation, the one that fits the request (see the package comment).
type Model struct {
	name    string
	replies []reply // immutable after New
	// rounds are the replies by conversation: rounds[k] answers a request
	// with k assistant messages; its failing replies first, then the
	// success that ends it (none in a last round of failures only).
	// Immutable after New.
	rounds [][]int

	mu             sync.Mutex // guards the fields below
	calls          int        // calls made so far; in order, replies[calls] answers the next
	byConversation bool
	// tries counts, by conversation, the calls made with one request (by
	// its fingerprint) to a round with failing replies: a retry plays the
	// round's next reply.
	tries    map[uint64]int
	played   int // by conversation: 1 + the furthest reply played
	record   bool
	requests []*model.Request
}

var _ model.Model = (*Model)(nil)

// New returns a model named name that answers with replies, in order. It
// panics if a reply is malformed (a tool call without a name, arguments
// that are not a JSON object, a negative Chunks or Delay): a script is
// written by a programmer, and a broken one should stop the test at once.
func New(name string, replies ...Reply) *Model {
	m, err := build(name, replies)
	if err != nil {
		panic(err)
	}
	return m
}

func build(name string, replies []Reply) (*Model, error) {
	if name == "" {
		name = "scripted"
	}
	m := &Model{name: name, replies: make([]reply, len(replies))}
	var round []int
	for i, r := range replies {
		c, err := compile(i, r)
		if err != nil {
			return nil, fmt.Errorf("scripted model %q: reply %d: %w", name, i+1, err)
		}
		m.replies[i] = c
		round = append(round, i)
		if c.err == nil {
			m.rounds = append(m.rounds, round)
			round = nil
		}
	}
	if round != nil {
		m.rounds = append(m.rounds, round)
	}
	return m, nil
}

// ByConversation makes m choose each reply by the request, as the package
// comment says, instead of in order, and returns m, for chaining:
//
//	m := scripted.New("x", replies...).ByConversation()
//
// Models loaded from a file play by conversation unless the file says
// play: in_order.
func (m *Model) ByConversation() *Model {
	m.mu.Lock()
	m.byConversation = true
	m.mu.Unlock()
	return m
}

// Name returns the name given to New.
func (m *Model) Name() string { return m.name }

// Record turns on request recording and returns m, for chaining:
//
//	m := scripted.New("x", replies...).Record()
//
// From then on every call stores a deep copy of its request, available from
// Requests. Recording is off by default because the copy is the only
// allocation that grows with the conversation.
func (m *Model) Record() *Model {
	m.mu.Lock()
	m.record = true
	m.mu.Unlock()
	return m
}

// Requests returns copies of the requests received since recording was
// turned on (or since Reset), in call order. It returns nil when recording
// is off; see Record.
func (m *Model) Requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.record {
		return nil
	}
	return slices.Clone(m.requests)
}

// Calls returns how many calls the model has received, including failed
// ones and those beyond the script.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Remaining returns how many replies have not been played yet: by
// conversation, how many follow the furthest one played. A test can check
// that an agent used its whole script with Remaining() == 0.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byConversation {
		return len(m.replies) - m.played
	}
	return max(len(m.replies)-m.calls, 0)
}

// Reset rewinds the script to its first reply and forgets the calls, the
// retries counted by conversation and the recorded requests. Recording
// and the way replies are chosen stay as they were.
func (m *Model) Reset() {
	m.mu.Lock()
	m.calls = 0
	m.tries = nil
	m.played = 0
	m.requests = nil
	m.mu.Unlock()
}

// Stream plays the next reply. Nothing happens until the caller ranges over
// the sequence; every range takes one reply.
//
// If ctx is already done, the stream yields ctx's error and takes no reply.
// Otherwise the reply is taken and its Expect checked; then, after its
// Delay, its chunks are yielded. The stream ends with an error, as its last
// value, when the call is beyond the script (ErrExhausted), the request
// does not match (ErrUnexpected), ctx is done during the delay or between
// chunks, or the reply is an Error reply.
//
// The chunks' ToolCalls slices are shared by every call that plays the
// reply: callers must not modify them. Each call gets its own Usage.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		n, call, byConversation := m.take(req)
		if n < 0 {
			yield(model.Chunk{}, m.exhausted(call, byConversation, req))
			return
		}
		m.play(ctx, n, req, yield)
	}
}

// take counts the call and records req. It returns the index of the
// reply that answers it (-1 when the call is beyond the script), the
// call's number (from 1) and whether the reply was chosen by
// conversation.
func (m *Model) take(req *model.Request) (n, call int, byConversation bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	call = m.calls
	if m.record {
		m.requests = append(m.requests, cloneRequest(req))
	}
	if !m.byConversation {
		if call > len(m.replies) {
			return -1, call, false
		}
		return call - 1, call, false
	}
	k := assistantReplies(req)
	if k >= len(m.rounds) {
		return -1, call, true
	}
	round := m.rounds[k]
	n = round[0]
	if len(round) > 1 {
		if m.tries == nil {
			m.tries = make(map[uint64]int)
		}
		f := fingerprint(req)
		n = round[min(m.tries[f], len(round)-1)]
		m.tries[f]++
	}
	m.played = max(m.played, n+1)
	return n, call, true
}

// assistantReplies counts the assistant messages of req: the replies the
// conversation has had.
func assistantReplies(req *model.Request) int {
	if req == nil {
		return 0
	}
	k := 0
	for i := range req.Messages {
		if req.Messages[i].Role == model.RoleAssistant {
			k++
		}
	}
	return k
}

// fingerprint hashes what a request's conversation says, so that a retry
// of the same call is told from another conversation at the same point.
func fingerprint(req *model.Request) uint64 {
	h := fnv.New64a()
	if req == nil {
		return h.Sum64()
	}
	field := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	field(req.System)
	for i := range req.Messages {
		msg := &req.Messages[i]
		field(string(msg.Role))
		field(msg.ToolCallID)
		field(msg.Name)
		for _, p := range msg.Parts {
			field(p.Text)
		}
		for _, c := range msg.ToolCalls {
			field(c.ID)
			field(c.Name)
			field(string(c.Arguments))
		}
		h.Write([]byte{1}) // the end of a message
	}
	return h.Sum64()
}

// noRequest stands for a nil request.
var noRequest model.Request

func (m *Model) play(ctx context.Context, n int, req *model.Request, yield func(model.Chunk, error) bool) {
	if req == nil {
		req = &noRequest
	}
	r := &m.replies[n]
	if r.expect != nil {
		if msg := r.expect.check(req); msg != "" {
			yield(model.Chunk{}, &scriptError{kind: ErrUnexpected, msg: fmt.Sprintf(
				"scripted model %q: reply %d of %d: %s", m.name, n+1, len(m.replies), msg)})
			return
		}
	}
	if r.delay > 0 {
		t := time.NewTimer(r.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			yield(model.Chunk{}, ctx.Err())
			return
		case <-t.C:
		}
	}
	last := len(r.chunks) - 1
	for i, c := range r.chunks {
		if i > 0 {
			if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, err)
				return
			}
		}
		if i == last && r.err == nil {
			u := r.usage
			if !r.hasUsage {
				u.InputTokens = tokens(requestSize(req))
			}
			c.Usage = &u
		}
		if !yield(c, nil) {
			return
		}
	}
	if r.err != nil {
		yield(model.Chunk{}, r.err)
	}
}

func (m *Model) exhausted(call int, byConversation bool, req *model.Request) error {
	last := "none"
	if req != nil && len(req.Messages) > 0 {
		last = describe(req.Messages[len(req.Messages)-1])
	}
	if byConversation {
		ok := len(m.rounds)
		if ok > 0 && m.replies[m.rounds[ok-1][len(m.rounds[ok-1])-1]].err != nil {
			ok-- // the last round has failures only
		}
		return &scriptError{kind: ErrExhausted, msg: fmt.Sprintf(
			"scripted model %q: the request holds %s, so it asks for reply %d of a conversation, and the script has %s (played by conversation); last message: %s",
			m.name, plural(assistantReplies(req), "assistant message", "assistant messages"), assistantReplies(req)+1,
			plural(ok, "successful reply", "successful replies"), last)}
	}
	return &scriptError{kind: ErrExhausted, msg: fmt.Sprintf(
		"scripted model %q: script has %s, call %d is beyond it; last message: %s",
		m.name, plural(len(m.replies), "reply", "replies"), call, last)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// scriptError carries a precise message and a sentinel for errors.Is.
type scriptError struct {
	kind error
	msg  string
}

func (e *scriptError) Error() string { return e.msg }
func (e *scriptError) Unwrap() error { return e.kind }

// check returns "" when req meets e, else what was expected and found.
func (e *Expect) check(req *model.Request) string {
	var msgs []string
	if e.LastUserContains != "" {
		if msg := expectLast(req, model.RoleUser, "user message", e.LastUserContains); msg != "" {
			msgs = append(msgs, msg)
		}
	}
	if e.LastToolResultContains != "" {
		if msg := expectLast(req, model.RoleTool, "tool result", e.LastToolResultContains); msg != "" {
			msgs = append(msgs, msg)
		}
	}
	for _, name := range e.ToolsInclude {
		if !slices.ContainsFunc(req.Tools, func(t model.ToolSpec) bool { return t.Name == name }) {
			msgs = append(msgs, fmt.Sprintf("expected the request to offer tool %q; it offers %s",
				name, toolNames(req.Tools)))
		}
	}
	return strings.Join(msgs, "; and ")
}

func expectLast(req *model.Request, role model.Role, what, want string) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := req.Messages[i]
		if msg.Role != role {
			continue
		}
		if strings.Contains(msg.Text(), want) {
			return ""
		}
		return fmt.Sprintf("expected the last %s to contain %q; it is %s", what, want, describe(msg))
	}
	return fmt.Sprintf("expected the last %s to contain %q; the request has no %s", what, want, what)
}

func toolNames(tools []model.ToolSpec) string {
	if len(tools) == 0 {
		return "no tools"
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = strconv.Quote(t.Name)
	}
	return strings.Join(names, ", ")
}

// describe renders a message for an error: its role, the tool it concerns
// and its text, quoted and cut to a readable length.
func describe(msg model.Message) string {
	var b strings.Builder
	b.WriteString(string(msg.Role))
	if msg.Role == model.RoleTool && msg.Name != "" {
		b.WriteString(" " + msg.Name)
	}
	if msg.IsError {
		b.WriteString(" (error)")
	}
	b.WriteString(": ")
	text := msg.Text()
	if text != "" || len(msg.ToolCalls) == 0 {
		b.WriteString(quoteCut(text, 200))
	}
	if len(msg.ToolCalls) > 0 {
		if text != "" {
			b.WriteString(" and ")
		}
		b.WriteString("tool calls")
		for _, c := range msg.ToolCalls {
			b.WriteString(" " + c.Name + " " + cut(string(c.Arguments), 80))
		}
	}
	return b.String()
}

func quoteCut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strconv.Quote(string(r[:n])) + "..."
	}
	return strconv.Quote(s)
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
