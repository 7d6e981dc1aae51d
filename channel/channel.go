// Package channel puts agents on chat platforms (Telegram, Slack, a
// signed webhook, …): a Channel verifies and parses a platform's
// requests and sends to it; a Hub mounts the channels, stores what a
// person sends in the gateway's durable inbox before the platform is
// answered, and delivers the agents' answers and questions from the
// store's durable outbox (session.Outbox).
//
// A channel's conversation is a gateway source, NAME:CONVERSATION (and
// :THREAD where the platform has threads), whose session is the source's
// (gateway.SessionOf): the gateway's coalescing, debounce and busy
// policies apply per chat.
package channel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Channel is one platform's side of a connection: what its requests say
// and how to send to it. Optional capabilities are Editor and Typist.
type Channel interface {
	// Receive verifies a request the platform sent (whole: its body is
	// read, within the hub's limit) and parses what it carries. A request
	// that fails verification is a *Refused error (401), one that cannot
	// be read another (400); either way nothing is stored.
	Receive(r *Request, now time.Time) (*Received, error)
	// Send posts m to a conversation and returns the platform's id of
	// the message. A failure the platform may get over is a *SendError
	// saying when to try again.
	Send(ctx context.Context, to Address, m Message) (ref string, err error)
	// TextLimit is the most characters a message may hold: longer text
	// goes in several messages.
	TextLimit() int
}

// Editor is the optional capability of a channel that can change a
// message it sent (its ref): an approval's buttons replaced by who
// decided.
type Editor interface {
	Edit(ctx context.Context, to Address, ref string, m Message) error
}

// Typist is the optional capability of a channel that can show that the
// agent is writing.
type Typist interface {
	Typing(ctx context.Context, to Address) error
}

// Acknowledger is the optional capability of a channel whose platform
// wants a button press acknowledged by a call of its own (Telegram's
// answerCallbackQuery), beside the request's answer.
type Acknowledger interface {
	Acknowledge(ctx context.Context, c Click, text string) error
}

// Hurried is the optional capability of a channel whose platform wants
// its requests answered within a deadline (Slack and Discord: 3 s): the
// hub downloads a message's attachments only for part of it, and the rest
// after the answer (Binding.AckWithin overrides it).
type Hurried interface {
	AckWithin() time.Duration
}

// DefaultAckWithin is how long a platform is taken to wait for its
// answer when its channel does not say (Hurried).
const DefaultAckWithin = 10 * time.Second

// Checker is the optional capability of a channel that can tell whether
// its credentials and URLs work (agentrt channels check): it calls the
// platform once and says what it found (the bot's name, the webhook set),
// or why not.
type Checker interface {
	Check(ctx context.Context) (string, error)
}

// Request is a request a platform sent to the channel's URL.
type Request struct {
	Method string
	// Path is what follows /v1/channels/NAME/ ("events", "interactivity").
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// Received is what a verified request carries.
type Received struct {
	Messages []Inbound
	Clicks   []Click
	// Response, when set, is the answer the platform wants (a challenge
	// echoed, a PONG); nil: 200 with an empty body.
	Response *Response
	// Ignored counts the events acknowledged without being for the agent
	// (edits, joins, the bot's own messages, delivery statuses).
	Ignored int
}

// Response is a channel's answer to a platform's request.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Inbound is a message a person sent.
type Inbound struct {
	// ID is the platform's id of the message, unique in the channel: the
	// input's idempotency key, so that a platform's retries are one input.
	ID string
	// Sender is the platform's id of the person, SenderName what they are
	// called.
	Sender, SenderName string
	// Conversation is the chat (channel, group, direct message); Thread
	// the thread in it, where the platform has threads.
	Conversation, Thread string
	Text                 string
	// Attachments are the images and files the message came with, which
	// the hub downloads (Downloader) and gives the turn.
	Attachments []Attachment
}

// Attachment is an image or a file of a message, as the platform names
// it: Ref is what the channel's Download takes (a file id, a URL), Size
// what the platform says it is (0: not said).
type Attachment struct {
	Ref, Name, Type string
	Size            int64
}

// Downloader is the optional capability of a channel that can fetch an
// attachment's bytes, with the platform's auth, at most limit bytes (more
// is an error): its media type too, when the platform says it.
type Downloader interface {
	Download(ctx context.Context, a Attachment, limit int64) (data []byte, typ string, err error)
}

// Click is a person's press of a button a message of the channel had.
type Click struct {
	// ID is the platform's id of the press.
	ID     string
	Sender string
	// Conversation and Thread are where the message with the button is;
	// Message its ref.
	Conversation, Thread, Message string
	// Data is the button's Data.
	Data string
	// Reply is the platform's own handle for answering the press (a
	// Slack response_url, a Telegram callback query id), for
	// Acknowledger.
	Reply string
}

// Address is where a message goes.
type Address struct {
	Conversation, Thread string
}

// Message is what the channel sends: text (Markdown, which the channel
// converts to the platform's format) and buttons under it.
type Message struct {
	Text    string
	Buttons []Button
	// Key names the message for a platform that drops a repeated send of
	// one key (the webhook's Idempotency-Key, Discord's nonce): the
	// outbox item's id and the part's number.
	Key string
}

// Button is a button under a message; Data comes back in its Click.
type Button struct {
	Label string
	Data  string
	Style string // "", "primary" or "danger"
}

// Refused is a platform request that failed verification (a bad or
// missing signature or secret, a stale timestamp): 401, nothing stored.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return "refused: " + e.Reason }

// SendError is a failed send. Permanent failures are given up on; the
// others are tried again, after RetryAfter when the platform said how
// long to wait.
type SendError struct {
	Status     int // the platform's HTTP status, 0 for none
	Permanent  bool
	RetryAfter time.Duration
	Err        error
}

func (e *SendError) Error() string {
	s := e.Err.Error()
	if e.Status != 0 {
		s = fmt.Sprintf("%d: %s", e.Status, s)
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

func (e *SendError) Unwrap() error { return e.Err }

// StatusError classifies a platform's HTTP status: 429 and 5xx are tried
// again (after retryAfter, when the platform said), other 4xx are not.
func StatusError(status int, retryAfter time.Duration, err error) *SendError {
	return &SendError{Status: status, RetryAfter: retryAfter, Err: err,
		Permanent: status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout}
}

// RetryAfter reads a Retry-After header: seconds, or an HTTP date; zero
// when absent or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	var secs int
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// errNoChannel is a source no configured channel owns.
var errNoChannel = errors.New("no channel owns the source")
