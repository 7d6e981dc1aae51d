package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Compaction keeps the history the model sees within bounds. Before a
// round's model call, when the conversation has more messages, characters
// or tokens than allowed, its older part is replaced by one system message
// summarising it, written by Model (the agent's model when nil) or, when
// that call fails or says nothing, cut from the messages themselves. The
// last KeepRecent messages stay as they are, and a tool call is never
// separated from its results. The messages stay in the log: only the
// State's view changes (a compaction event), so replay and fork see
// everything.
//
// Compaction is on by default: with none of MaxMessages, MaxChars and
// MaxTokens set, a history of more than DefaultCompactMessages messages
// or DefaultCompactChars characters is compacted (no model says how large
// its context window is, so the bounds are the same for every model). Set
// one of them and only those set apply; Off turns compaction off. Off or
// not, a request the provider refuses as too long (code context_length)
// is compacted and retried once, since the run would fail otherwise.
type Compaction struct {
	// Off turns compaction by size off.
	Off         bool
	MaxMessages int
	MaxChars    int
	// MaxTokens counts with the model's tiktoken encoding when tiktoken
	// knows the model, else estimates about four bytes a token.
	MaxTokens int
	// KeepRecent is how many of the last messages are kept; zero means
	// DefaultKeepRecent. At least MinKeepRecent.
	KeepRecent int
	Model      model.Model
}

// Defaults of Compaction.
const (
	DefaultKeepRecent = 8
	MinKeepRecent     = 4
	// DefaultCompactMessages and DefaultCompactChars bound the history
	// when no limit is set.
	DefaultCompactMessages = 20
	DefaultCompactChars    = 48_000
)

// limits returns the bounds in force: those set, else the defaults; all
// zero when c is off.
func (c Compaction) limits() (messages, chars, tokens int) {
	switch {
	case c.Off:
		return 0, 0, 0
	case c.MaxMessages == 0 && c.MaxChars == 0 && c.MaxTokens == 0:
		return DefaultCompactMessages, DefaultCompactChars, 0
	}
	return c.MaxMessages, c.MaxChars, c.MaxTokens
}

func (c Compaction) keep() int {
	if c.KeepRecent == 0 {
		return DefaultKeepRecent
	}
	return c.KeepRecent
}

// check reports what makes c unusable.
func (c Compaction) check() error {
	switch {
	case c.MaxMessages < 0 || c.MaxChars < 0 || c.MaxTokens < 0 || c.KeepRecent < 0:
		return fmt.Errorf("compaction: limits must not be negative (max_messages %d, max_chars %d, max_tokens %d, keep_recent %d)",
			c.MaxMessages, c.MaxChars, c.MaxTokens, c.KeepRecent)
	case c.Off && (c.MaxMessages > 0 || c.MaxChars > 0 || c.MaxTokens > 0 || c.KeepRecent > 0 || c.Model != nil):
		return errors.New("compaction: off, yet limits, keep_recent or a model are set: it is either off or configured")
	case c.Off:
		return nil
	case c.KeepRecent != 0 && c.KeepRecent < MinKeepRecent:
		return fmt.Errorf("compaction: keep_recent (%d) must be at least %d", c.KeepRecent, MinKeepRecent)
	case c.MaxMessages > 0 && c.MaxMessages <= c.keep():
		return fmt.Errorf("compaction: max_messages (%d) must be above keep_recent (%d)", c.MaxMessages, c.keep())
	}
	if m, _, _ := c.limits(); c.MaxMessages == 0 && m > 0 && m <= c.keep() {
		return fmt.Errorf("compaction: keep_recent (%d) must be below %d, the default max_messages; set max_messages above it", c.keep(), m)
	}
	return nil
}

// compactionDue reports why the history must be compacted before the
// next model call, or "".
func (x *Exec) compactionDue() string {
	maxMessages, maxChars, maxTokens := x.agent.Compaction.limits()
	msgs := x.st.Messages
	if maxMessages > 0 && len(msgs) > maxMessages {
		return "max_messages"
	}
	// Counted each round, over the whole history: cheap next to the
	// model call that follows (and with the default bounds at most
	// DefaultCompactMessages messages are counted).
	if maxChars > 0 && historyChars(msgs) > maxChars {
		return "max_chars"
	}
	if maxTokens > 0 {
		// The estimate first: the exact count (~9 ms for 500 messages with
		// tiktoken) only near the limit.
		switch est := estimateMessages(msgs); {
		case est > maxTokens*3/2:
			return "max_tokens"
		case est > maxTokens*3/4:
			if n, _ := x.r.tokens.count(x.sessionModel().Name(), msgs); n > maxTokens {
				return "max_tokens"
			}
		}
	}
	return ""
}

func historyChars(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		for _, p := range msgs[i].Parts {
			n += len(p.Text)
		}
		for _, c := range msgs[i].ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}

// compactSplit returns how many of the first messages to compact so that
// the last keep stay, moved back so that the kept part begins with no
// tool result whose call would be compacted; 0 when there is nothing to
// compact (a summary alone, or nothing before the kept part).
func compactSplit(msgs []model.Message, keep int) int {
	split := len(msgs) - keep
	for split > 0 && msgs[split].Role == model.RoleTool {
		split-- // the assistant message with the calls goes with its results
	}
	if split <= 0 || split == 1 && isSummary(msgs[0]) {
		return 0
	}
	return split
}

// summaryPrefix begins the system message a compaction leaves.
const summaryPrefix = "[compacted] "

func isSummary(m model.Message) bool {
	return m.Role == model.RoleSystem && strings.HasPrefix(m.Text(), summaryPrefix)
}

// summaryMessage is the message that stands for the compacted ones.
func summaryMessage(summary string) model.Message {
	return model.TextMessage(model.RoleSystem, summaryPrefix+summary)
}

// summariserPrompt asks for the summary.
const summariserPrompt = `You compact conversations between a user and an AI assistant that uses tools. ` +
	`Summarise the conversation you are given so that the assistant can go on without it: ` +
	`the user's requests and preferences, the facts and tool results that still matter (names, numbers, ids, paths), ` +
	`what was decided and done, and what is still open. Be brief and exact; write only the summary.`

// maxTranscript bounds the transcript sent to the summariser, and
// maxTruncated the summary truncation writes when the summariser fails.
const (
	maxTranscript = 200_000
	maxTruncated  = 4_000
	excerpt       = 200
)

// transcript renders msgs for the summariser, each message's text cut to
// limit bytes (0: whole), the whole cut to total.
func transcript(msgs []model.Message, limit, total int) string {
	var b strings.Builder
	for i := range msgs {
		m := &msgs[i]
		text := m.Text()
		if isSummary(*m) {
			text = strings.TrimPrefix(text, summaryPrefix)
			fmt.Fprintf(&b, "[earlier, summarised] %s\n", clipText(text, limit))
			continue
		}
		switch {
		case m.Role == model.RoleTool:
			fmt.Fprintf(&b, "[tool %s result] %s\n", m.Name, clipText(text, limit))
		case len(m.ToolCalls) > 0:
			if text != "" {
				fmt.Fprintf(&b, "[assistant] %s\n", clipText(text, limit))
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "[assistant calls %s] %s\n", c.Name, clipText(string(c.Arguments), limit))
			}
		default:
			fmt.Fprintf(&b, "[%s] %s\n", m.Role, clipText(text, limit))
		}
		if b.Len() >= total {
			break
		}
	}
	return clipText(b.String(), total)
}

func clipText(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut-- // not inside a UTF-8 sequence
	}
	return s[:cut] + "…"
}

// request is the summariser's request for a history msgs compacted for
// reason, and how many of its messages it summarises (0: none, and no
// request): what compact sends, and what SentRequest derives.
func (c Compaction) request(msgs []model.Message, reason string) (*model.Request, int) {
	keep := c.keep()
	if reason == "context_length" {
		keep = MinKeepRecent // the provider said it is too long: keep the least
	}
	split := compactSplit(msgs, keep)
	if split == 0 {
		return nil, 0
	}
	return &model.Request{System: summariserPrompt, Messages: []model.Message{
		model.TextMessage(model.RoleUser, "The conversation to summarise:\n\n"+transcript(msgs[:split], 0, maxTranscript)),
	}}, split
}

// compact replaces the older part of the history with a summary: a
// compaction event, after the summariser's model call. reason says what
// set it off. It returns whether it compacted anything; an error only when
// the run must stop (canceled, or the store failed).
func (x *Exec) compact(ctx context.Context, reason string) (bool, error) {
	c := x.agent.Compaction
	msgs := x.st.Messages
	req, split := c.request(msgs, reason)
	if split == 0 {
		return false, nil
	}
	ev := session.Compaction{CompactedCount: split, Reason: reason}
	resp, err := x.Complete(ctx, ModelCall{Request: req, Purpose: "compaction", Model: c.Model, Quiet: true})
	switch {
	case err != nil && (ctx.Err() != nil || isStoreOrLease(err)):
		return false, err
	case err != nil:
		ev.Error = "the summariser failed: " + AsError(err).Error()
	case strings.TrimSpace(resp.Message.Text()) == "":
		ev.Error = "the summariser returned nothing"
	default:
		ev.Summary = strings.TrimSpace(resp.Message.Text())
	}
	if ev.Summary == "" {
		ev.Truncated = true
		ev.Summary = "(truncated: the summary could not be written) " + transcript(msgs[:split], excerpt, maxTruncated)
	}
	emit(x, ev)
	x.checked = 0
	if err := x.hooks.onCompaction(ctx, x.info(), &ev); err != nil {
		return true, err
	}
	return true, nil
}

// isStoreOrLease reports whether err means the run cannot write any more.
func isStoreOrLease(err error) bool {
	re := AsError(err)
	return re.Kind == FailStore || re.Code == CodeLeaseLost || re.Code == CodeLeaseExpired
}

// isContextLength reports whether err is a provider refusing a request as
// too long.
func isContextLength(err error) bool {
	var me *model.Error
	return errors.As(err, &me) && me.Code == model.CodeContextLength || AsError(err).Code == string(model.CodeContextLength)
}
