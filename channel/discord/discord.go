// Package discord is the Discord channel, over interactions by HTTP
// (https://discord.com/developers/docs/interactions/receiving-and-responding):
// requests signed with the application's Ed25519 key
// (X-Signature-Ed25519 over X-Signature-Timestamp and the body), PING
// answered with PONG, a slash command's text taken as a message (and
// acknowledged at once with the question quoted), button presses
// (message components) acknowledged with a deferred update; the agent's
// messages posted to the channel with the bot's token, each with a nonce
// Discord enforces (a message sent twice shows once), edited with PATCH.
package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/channel"
)

// DefaultAPIURL is Discord's API, with the version the channel speaks.
const DefaultAPIURL = "https://discord.com/api/v10"

// TextLimit is the most characters a message holds.
const TextLimit = 2000

// Tolerance is how far a request's timestamp may be from the clock.
const Tolerance = 5 * time.Minute

// Config configures a Discord channel.
type Config struct {
	// PublicKey is the application's public key (hex), which signs the
	// interactions; BotToken posts the messages. Both required.
	PublicKey, BotToken string
	// APIURL is the API's base URL with its version; empty:
	// DefaultAPIURL.
	APIURL string
	Client *http.Client
}

// Channel is a Discord channel.
type Channel struct {
	cfg Config
	key ed25519.PublicKey
}

// New makes a Discord channel.
func New(cfg Config) (*Channel, error) {
	if cfg.PublicKey == "" || cfg.BotToken == "" {
		return nil, errors.New("discord: public_key and bot_token are required")
	}
	key, err := hex.DecodeString(cfg.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, errors.New("discord: public_key: want the application's public key, 64 hex digits")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	return &Channel{cfg: cfg, key: key}, nil
}

// Interaction types and response types.
const (
	typePing             = 1
	typeCommand          = 2
	typeComponent        = 3
	respPong             = 1
	respMessage          = 4
	respDeferredUpdate   = 6
	flagEphemeral        = 64
	componentActionRow   = 1
	componentButton      = 2
	buttonPrimary        = 1
	buttonSecondary      = 2
	buttonDanger         = 4
	optionTypeString     = 3
	optionTypeAttachment = 11
	maxNonce             = 25
	defaultCommandOption = "text"
)

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
}

// Interaction is the part of an interaction the channel reads.
type Interaction struct {
	ID        string `json:"id"`
	Type      int    `json:"type"`
	ChannelID string `json:"channel_id"`
	Member    *struct {
		User user `json:"user"`
	} `json:"member,omitempty"`
	User *user `json:"user,omitempty"`
	Data *struct {
		Name     string `json:"name"`
		CustomID string `json:"custom_id"`
		Options  []struct {
			Name  string `json:"name"`
			Type  int    `json:"type"`
			Value any    `json:"value"`
		} `json:"options"`
		Resolved *struct {
			Attachments map[string]struct {
				Filename    string `json:"filename"`
				ContentType string `json:"content_type"`
				Size        int64  `json:"size"`
				URL         string `json:"url"`
			} `json:"attachments"`
		} `json:"resolved,omitempty"`
	} `json:"data,omitempty"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message,omitempty"`
	Token string `json:"token"`
}

func (in *Interaction) user() user {
	if in.Member != nil {
		return in.Member.User
	}
	if in.User != nil {
		return *in.User
	}
	return user{}
}

func respond(v any) *channel.Response {
	b, _ := json.Marshal(v)
	return &channel.Response{Status: http.StatusOK, ContentType: "application/json", Body: b}
}

// Receive verifies an interaction's Ed25519 signature (and that its
// timestamp is within five minutes) and reads it: PING is answered with
// PONG; a slash command's string options are a message (answered at once
// with the question quoted); a button's press is a click (answered with a
// deferred update); other types are acknowledged.
func (c *Channel) Receive(r *channel.Request, now time.Time) (*channel.Received, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("discord: want POST, got %s", r.Method)
	}
	sig, err := hex.DecodeString(r.Header.Get("X-Signature-Ed25519"))
	ts := r.Header.Get("X-Signature-Timestamp")
	if err != nil || len(sig) != ed25519.SignatureSize || ts == "" {
		return nil, &channel.Refused{Reason: "no Ed25519 signature (X-Signature-Ed25519, X-Signature-Timestamp)"}
	}
	if !ed25519.Verify(c.key, append([]byte(ts), r.Body...), sig) {
		return nil, &channel.Refused{Reason: "the Ed25519 signature does not match"}
	}
	if secs, err := strconv.ParseInt(ts, 10, 64); err != nil || now.Sub(time.Unix(secs, 0)).Abs() > Tolerance {
		return nil, &channel.Refused{Reason: "the signature's timestamp is more than " + Tolerance.String() + " from now: a replay?"}
	}
	var in Interaction
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, fmt.Errorf("discord: the body is not an interaction: %w", err)
	}
	got := &channel.Received{}
	u := in.user()
	switch in.Type {
	case typePing:
		got.Response = respond(map[string]int{"type": respPong})
	case typeCommand:
		var parts []string
		var atts []channel.Attachment
		if in.Data != nil {
			for _, o := range in.Data.Options {
				s, ok := o.Value.(string)
				switch {
				case ok && o.Type == optionTypeString:
					parts = append(parts, s)
				case ok && o.Type == optionTypeAttachment && in.Data.Resolved != nil:
					if a, found := in.Data.Resolved.Attachments[s]; found {
						atts = append(atts, channel.Attachment{Ref: a.URL, Name: a.Filename, Type: a.ContentType, Size: a.Size})
					}
				}
			}
		}
		text := strings.Join(parts, "\n")
		if text == "" && len(atts) == 0 {
			got.Response = respond(map[string]any{"type": respMessage, "data": map[string]any{"content": "Say something: /" + in.Data.Name + " text:…", "flags": flagEphemeral}})
			got.Ignored++
			break
		}
		got.Messages = append(got.Messages, channel.Inbound{ID: in.ID, Sender: u.ID, SenderName: name(u), Conversation: in.ChannelID, Text: text, Attachments: atts})
		got.Response = respond(map[string]any{"type": respMessage, "data": map[string]any{"content": quote(name(u), text)}})
	case typeComponent:
		cl := channel.Click{ID: in.ID, Sender: u.ID, Conversation: in.ChannelID, Reply: in.Token}
		if in.Data != nil {
			cl.Data = in.Data.CustomID
		}
		if in.Message != nil {
			cl.Message = in.Message.ID
		}
		got.Clicks = append(got.Clicks, cl)
		got.Response = respond(map[string]int{"type": respDeferredUpdate})
	default:
		got.Ignored++
		got.Response = respond(map[string]int{"type": respDeferredUpdate})
	}
	return got, nil
}

func name(u user) string {
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}

// quote is the question as the command's answer shows it.
func quote(who, text string) string {
	s := "**" + who + "** asked:\n> " + strings.ReplaceAll(text, "\n", "\n> ")
	if r := []rune(s); len(r) > TextLimit {
		s = string(r[:TextLimit-1]) + "…"
	}
	return s
}

// components are a message's buttons, in one row (Discord takes five).
func components(bs []channel.Button) []any {
	if len(bs) == 0 {
		return []any{}
	}
	var row []any
	for _, b := range bs[:min(len(bs), 5)] {
		style := buttonSecondary
		switch b.Style {
		case "primary":
			style = buttonPrimary
		case "danger":
			style = buttonDanger
		}
		row = append(row, map[string]any{"type": componentButton, "style": style, "label": b.Label, "custom_id": b.Data})
	}
	return []any{map[string]any{"type": componentActionRow, "components": row}}
}

// Send posts a message to the channel, with a nonce Discord enforces: a
// send tried again (after a crash, say) within its window shows once.
func (c *Channel) Send(ctx context.Context, to channel.Address, m channel.Message) (string, error) {
	req := map[string]any{"content": m.Text, "components": components(m.Buttons), "allowed_mentions": map[string]any{"parse": []string{}}}
	if m.Key != "" {
		req["nonce"], req["enforce_nonce"] = nonce(m.Key), true
	}
	var res struct {
		ID string `json:"id"`
	}
	if err := c.call(ctx, http.MethodPost, "/channels/"+to.Conversation+"/messages", req, &res); err != nil {
		return "", err
	}
	return res.ID, nil
}

func nonce(key string) string {
	n := "agentrt" + key
	if len(n) > maxNonce {
		n = n[len(n)-maxNonce:]
	}
	return n
}

// Edit changes a message the bot sent.
func (c *Channel) Edit(ctx context.Context, to channel.Address, ref string, m channel.Message) error {
	return c.call(ctx, http.MethodPatch, "/channels/"+to.Conversation+"/messages/"+ref,
		map[string]any{"content": m.Text, "components": components(m.Buttons)}, nil)
}

// Typing triggers the typing indicator.
func (c *Channel) Typing(ctx context.Context, to channel.Address) error {
	return c.call(ctx, http.MethodPost, "/channels/"+to.Conversation+"/typing", nil, nil)
}

// TextLimit implements channel.Channel.
func (c *Channel) TextLimit() int { return TextLimit }

// AckWithin is how long Discord waits for a request's answer: https://discord.com/developers/docs/interactions/receiving-and-responding (3 seconds, else the interaction fails).
func (c *Channel) AckWithin() time.Duration { return 3 * time.Second }

func (c *Channel) call(ctx context.Context, method, path string, req, out any) error {
	var body io.Reader
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return &channel.SendError{Permanent: true, Err: err}
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.cfg.APIURL+path, body)
	if err != nil {
		return &channel.SendError{Permanent: true, Err: err}
	}
	hr.Header.Set("Authorization", "Bot "+c.cfg.BotToken)
	if req != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	res, err := c.cfg.Client.Do(hr)
	if err != nil {
		return &channel.SendError{Err: fmt.Errorf("discord %s %s: %w", method, path, err)}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		var e struct {
			Message    string  `json:"message"`
			Code       int     `json:"code"`
			RetryAfter float64 `json:"retry_after"`
		}
		_ = json.Unmarshal(b, &e)
		wait := channel.RetryAfter(res.Header, time.Now())
		if e.RetryAfter > 0 {
			wait = time.Duration(e.RetryAfter * float64(time.Second))
		}
		return channel.StatusError(res.StatusCode, wait, fmt.Errorf("discord %s %s: %s (code %d)", method, path, e.Message, e.Code))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return &channel.SendError{Permanent: true, Err: fmt.Errorf("discord %s %s: the answer: %w", method, path, err)}
		}
	}
	return nil
}

// Check gets the bot's user: the token works.
func (c *Channel) Check(ctx context.Context) (string, error) {
	var me user
	if err := c.call(ctx, http.MethodGet, "/users/@me", nil, &me); err != nil {
		return "", err
	}
	return "bot " + me.Username + " (" + me.ID + ")", nil
}

// cdnHosts are where Discord serves attachments; the API's own host is
// trusted too (another base URL, a test's).
var cdnHosts = []string{"cdn.discordapp.com", "media.discordapp.net"}

// Download fetches a command's attachment from Discord's CDN (its URL is
// signed; no token is sent), at most limit bytes. A URL of another host is
// not fetched.
func (c *Channel) Download(ctx context.Context, a channel.Attachment, limit int64) ([]byte, string, error) {
	u, err := url.Parse(a.Ref)
	api, _ := url.Parse(c.cfg.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !(slices.Contains(cdnHosts, u.Hostname()) || api != nil && u.Host == api.Host) {
		return nil, "", fmt.Errorf("an attachment URL not of Discord's CDN: %q", a.Ref)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.Ref, nil)
	if err != nil {
		return nil, "", err
	}
	res, err := c.cfg.Client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("the attachment: %d", res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("more than the %d bytes taken", limit)
	}
	return data, res.Header.Get("Content-Type"), nil
}
