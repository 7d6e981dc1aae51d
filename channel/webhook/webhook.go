// Package webhook is a channel any system can plug into: it posts signed
// JSON to the channel's URL, and gets the agent's messages as signed JSON
// posted to its own. Both ways are signed alike (docs/channels.md):
//
//	X-Agentrt-Signature: t=UNIX_SECONDS,v1=HEX(HMAC-SHA256(secret, "UNIX_SECONDS." + body))
//
// and a request more than five minutes from the receiver's clock is
// refused (a replay).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/channel"
)

// SignatureHeader is the header of a request's signature.
const SignatureHeader = "X-Agentrt-Signature"

// Tolerance is how far a signed request's time may be from the
// receiver's clock.
const Tolerance = 5 * time.Minute

// Config configures a webhook channel.
type Config struct {
	// Secret signs both ways. Required.
	Secret string
	// ReplyURL is where the agent's messages are posted. Required.
	ReplyURL string
	// Client sends them; nil: a client with a 30 s timeout.
	Client *http.Client
	// TextLimit bounds a message's text; zero: 4,000 characters.
	TextLimit int
}

// Channel is a webhook channel.
type Channel struct {
	cfg Config
}

// New makes a webhook channel.
func New(cfg Config) (*Channel, error) {
	if cfg.Secret == "" {
		return nil, errors.New("webhook: a secret is required (it signs both ways)")
	}
	if !strings.HasPrefix(cfg.ReplyURL, "http://") && !strings.HasPrefix(cfg.ReplyURL, "https://") {
		return nil, fmt.Errorf("webhook: reply_url %q: want an http(s) URL", cfg.ReplyURL)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.TextLimit == 0 {
		cfg.TextLimit = 4000
	}
	return &Channel{cfg: cfg}, nil
}

// Sign returns the signature header's value for body at time t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header's value for body at now.
func Verify(secret, header string, body []byte, now time.Time) error {
	var ts, sig string
	for _, kv := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig == "" {
				sig = v
			}
		}
	}
	if ts == "" || sig == "" {
		return &channel.Refused{Reason: "no signature (" + SignatureHeader + ": t=…,v1=…)"}
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return &channel.Refused{Reason: "the signature's time is not a number"}
	}
	if d := now.Sub(time.Unix(secs, 0)); d > Tolerance || d < -Tolerance {
		return &channel.Refused{Reason: fmt.Sprintf("the signature's time is %s from now (at most %s): a replay?", d.Round(time.Second), Tolerance)}
	}
	if !hmac.Equal([]byte(sig), []byte(mac(secret, ts, body))) {
		return &channel.Refused{Reason: "the signature does not match"}
	}
	return nil
}

// Event is what the system posts: a person's message, or a press of one
// of the buttons the agent's messages had.
type Event struct {
	Type         string `json:"type"` // "message" or "click"
	ID           string `json:"id"`
	Sender       string `json:"sender"`
	SenderName   string `json:"sender_name,omitempty"`
	Conversation string `json:"conversation"`
	Thread       string `json:"thread,omitempty"`
	Text         string `json:"text,omitempty"`
	// Message and Data are a click's: the ref of the message whose button
	// was pressed, and the button's data.
	Message string `json:"message,omitempty"`
	Data    string `json:"data,omitempty"`
}

// Receive verifies and parses a posted event, or a batch of them
// ({"events": [...]}). See channel.Channel.
func (c *Channel) Receive(r *channel.Request, now time.Time) (*channel.Received, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("webhook: want POST, got %s", r.Method)
	}
	if err := Verify(c.cfg.Secret, r.Header.Get(SignatureHeader), r.Body, now); err != nil {
		return nil, err
	}
	var batch struct {
		Events []Event `json:"events"`
	}
	var one Event
	if err := json.Unmarshal(r.Body, &batch); err != nil || batch.Events == nil {
		if err := json.Unmarshal(r.Body, &one); err != nil {
			return nil, fmt.Errorf("webhook: the body is not an event: %w", err)
		}
		batch.Events = []Event{one}
	}
	got := &channel.Received{}
	for i, e := range batch.Events {
		if e.ID == "" || e.Conversation == "" {
			return nil, fmt.Errorf("webhook: event %d: wants an id and a conversation", i+1)
		}
		switch e.Type {
		case "message":
			got.Messages = append(got.Messages, channel.Inbound{ID: e.ID, Sender: e.Sender, SenderName: e.SenderName,
				Conversation: e.Conversation, Thread: e.Thread, Text: e.Text})
		case "click":
			got.Clicks = append(got.Clicks, channel.Click{ID: e.ID, Sender: e.Sender, Conversation: e.Conversation, Thread: e.Thread,
				Message: e.Message, Data: e.Data})
		default:
			got.Ignored++
		}
	}
	return got, nil
}

// Reply is what the channel posts to the reply URL.
type Reply struct {
	Type         string           `json:"type"` // "message", "edit", "typing" or "ping" (channels check)
	Conversation string           `json:"conversation"`
	Thread       string           `json:"thread,omitempty"`
	Text         string           `json:"text,omitempty"`
	Buttons      []channel.Button `json:"buttons,omitempty"`
	// Ref, for an edit, is the message to change.
	Ref string `json:"ref,omitempty"`
}

// Send posts a message. The Idempotency-Key header names it: a receiver
// that keeps the keys it saw never shows one twice. See channel.Channel.
func (c *Channel) Send(ctx context.Context, to channel.Address, m channel.Message) (string, error) {
	return c.post(ctx, Reply{Type: "message", Conversation: to.Conversation, Thread: to.Thread, Text: m.Text, Buttons: buttonsOf(m)}, m.Key)
}

// Edit changes a message sent before. See channel.Editor.
func (c *Channel) Edit(ctx context.Context, to channel.Address, ref string, m channel.Message) error {
	_, err := c.post(ctx, Reply{Type: "edit", Conversation: to.Conversation, Thread: to.Thread, Text: m.Text, Buttons: buttonsOf(m), Ref: ref}, "")
	return err
}

// Typing says the agent is writing. See channel.Typist.
func (c *Channel) Typing(ctx context.Context, to channel.Address) error {
	_, err := c.post(ctx, Reply{Type: "typing", Conversation: to.Conversation, Thread: to.Thread}, "")
	return err
}

// TextLimit implements channel.Channel.
func (c *Channel) TextLimit() int { return c.cfg.TextLimit }

func buttonsOf(m channel.Message) []channel.Button {
	if len(m.Buttons) == 0 {
		return nil
	}
	return m.Buttons
}

func (c *Channel) post(ctx context.Context, r Reply, key string) (string, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return "", &channel.SendError{Permanent: true, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.ReplyURL, bytes.NewReader(body))
	if err != nil {
		return "", &channel.SendError{Permanent: true, Err: err}
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(c.cfg.Secret, now, body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := c.cfg.Client.Do(req)
	if err != nil {
		return "", &channel.SendError{Err: err}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode/100 != 2 {
		return "", channel.StatusError(res.StatusCode, channel.RetryAfter(res.Header, now), fmt.Errorf("the reply URL answered %s", strings.TrimSpace(string(b))))
	}
	var out struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &out) // an answer without an id is fine
	return out.ID, nil
}

// Check posts a signed {"type": "ping"} to the reply URL, which must
// answer 2xx.
func (c *Channel) Check(ctx context.Context) (string, error) {
	if _, err := c.post(ctx, Reply{Type: "ping"}, ""); err != nil {
		return "", err
	}
	return "reply_url " + c.cfg.ReplyURL + " answered a signed ping", nil
}
