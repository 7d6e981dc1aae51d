// Package whatsapp is the WhatsApp channel, over the WhatsApp Cloud API
// (https://developers.facebook.com/docs/whatsapp/cloud-api): the webhook's
// verification request (hub.challenge, checked against the verify token),
// notifications signed with the app secret (X-Hub-Signature-256), batched
// entries of messages (statuses ignored), replies with /PHONE_NUMBER_ID/messages
// (text, and reply buttons or a list for a question).
package whatsapp

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/agentrt/agentrt/channel"
)

// DefaultAPIURL is the Graph API's, with the version the channel speaks.
const DefaultAPIURL = "https://graph.facebook.com/v21.0"

// TextLimit is the most characters a text message holds.
const TextLimit = 4096

// Config configures a WhatsApp channel.
type Config struct {
	// AccessToken sends; AppSecret signs the notifications; VerifyToken
	// is what the webhook's verification request must carry; PhoneNumberID
	// is the business number's id. All required.
	AccessToken, AppSecret, VerifyToken, PhoneNumberID string
	// APIURL is the Graph API's base URL, with its version; empty:
	// DefaultAPIURL.
	APIURL string
	Client *http.Client
}

// Channel is a WhatsApp channel.
type Channel struct {
	cfg Config
}

// New makes a WhatsApp channel.
func New(cfg Config) (*Channel, error) {
	if cfg.AccessToken == "" || cfg.AppSecret == "" || cfg.VerifyToken == "" || cfg.PhoneNumberID == "" {
		return nil, errors.New("whatsapp: access_token, app_secret, verify_token and phone_number_id are required")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	return &Channel{cfg: cfg}, nil
}

// Notification is the part of a webhook notification the channel reads.
type Notification struct {
	Object string `json:"object"`
	Entry  []struct {
		Changes []struct {
			Field string `json:"field"`
			Value struct {
				Contacts []struct {
					Profile struct {
						Name string `json:"name"`
					} `json:"profile"`
					WaID string `json:"wa_id"`
				} `json:"contacts"`
				Messages []struct {
					From string `json:"from"`
					ID   string `json:"id"`
					Type string `json:"type"`
					Text *struct {
						Body string `json:"body"`
					} `json:"text,omitempty"`
					Interactive *struct {
						Type        string `json:"type"`
						ButtonReply *struct {
							ID    string `json:"id"`
							Title string `json:"title"`
						} `json:"button_reply,omitempty"`
						ListReply *struct {
							ID    string `json:"id"`
							Title string `json:"title"`
						} `json:"list_reply,omitempty"`
					} `json:"interactive,omitempty"`
					Context *struct {
						ID string `json:"id"`
					} `json:"context,omitempty"`
					Image    *waMedia `json:"image,omitempty"`
					Document *waMedia `json:"document,omitempty"`
				} `json:"messages"`
				Statuses []json.RawMessage `json:"statuses"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// waMedia is an image's or a document's part of a message: the media's
// id (which the Graph API resolves to a URL), its type, caption and name.
type waMedia struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
}

// Receive answers the webhook's verification request (GET) and reads a
// notification (POST), whose X-Hub-Signature-256 must be the app secret's
// HMAC-SHA256 of the body. A batch's messages each count; delivery
// statuses and other fields are acknowledged and ignored.
func (c *Channel) Receive(r *channel.Request, now time.Time) (*channel.Received, error) {
	if r.Method == http.MethodGet {
		q := r.Query
		if q.Get("hub.mode") != "subscribe" || subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), []byte(c.cfg.VerifyToken)) != 1 {
			return nil, &channel.Refused{Reason: "the verification request's hub.verify_token does not match"}
		}
		return &channel.Received{Response: &channel.Response{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(q.Get("hub.challenge"))}}, nil
	}
	sig, ok := strings.CutPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256=")
	m := hmac.New(sha256.New, []byte(c.cfg.AppSecret))
	m.Write(r.Body)
	if !ok || !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(m.Sum(nil)))) {
		return nil, &channel.Refused{Reason: "X-Hub-Signature-256 does not match"}
	}
	var n Notification
	if err := json.Unmarshal(r.Body, &n); err != nil {
		return nil, fmt.Errorf("whatsapp: the body is not a notification: %w", err)
	}
	got := &channel.Received{}
	for _, e := range n.Entry {
		for _, ch := range e.Changes {
			if ch.Field != "messages" {
				got.Ignored++
				continue
			}
			names := map[string]string{}
			for _, ct := range ch.Value.Contacts {
				names[ct.WaID] = ct.Profile.Name
			}
			got.Ignored += len(ch.Value.Statuses)
			for _, msg := range ch.Value.Messages {
				switch {
				case msg.Type == "text" && msg.Text != nil:
					got.Messages = append(got.Messages, channel.Inbound{ID: msg.ID, Sender: msg.From, SenderName: names[msg.From],
						Conversation: msg.From, Text: msg.Text.Body})
				case (msg.Type == "image" && msg.Image != nil) || (msg.Type == "document" && msg.Document != nil):
					md, name := msg.Image, "image"
					if md == nil {
						md, name = msg.Document, cmp.Or(msg.Document.Filename, "document")
					}
					got.Messages = append(got.Messages, channel.Inbound{ID: msg.ID, Sender: msg.From, SenderName: names[msg.From],
						Conversation: msg.From, Text: md.Caption, Attachments: []channel.Attachment{{Ref: md.ID, Name: name, Type: md.MimeType}}})
				case msg.Type == "interactive" && msg.Interactive != nil:
					var id string
					switch {
					case msg.Interactive.ButtonReply != nil:
						id = msg.Interactive.ButtonReply.ID
					case msg.Interactive.ListReply != nil:
						id = msg.Interactive.ListReply.ID
					}
					cl := channel.Click{ID: msg.ID, Sender: msg.From, Conversation: msg.From, Data: id}
					if msg.Context != nil {
						cl.Message = msg.Context.ID
					}
					got.Clicks = append(got.Clicks, cl)
				default:
					got.Ignored++ // audio, video, locations, reactions: not yet
				}
			}
		}
	}
	return got, nil
}

// Send sends a text message, or, with buttons, an interactive one: reply
// buttons (at most three, titles of at most 20 characters) or a list (up
// to ten).
func (c *Channel) Send(ctx context.Context, to channel.Address, m channel.Message) (string, error) {
	req := map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "to": to.Conversation}
	body := Format(m.Text)
	switch n := len(m.Buttons); {
	case n == 0:
		req["type"], req["text"] = "text", map[string]any{"body": body}
	case n <= 3:
		var bs []any
		for _, b := range m.Buttons {
			bs = append(bs, map[string]any{"type": "reply", "reply": map[string]string{"id": b.Data, "title": clip(b.Label, 20)}})
		}
		req["type"], req["interactive"] = "interactive", map[string]any{"type": "button", "body": map[string]string{"text": clip(body, 1024)},
			"action": map[string]any{"buttons": bs}}
	default:
		var rows []any
		for _, b := range m.Buttons[:min(n, 10)] {
			rows = append(rows, map[string]string{"id": b.Data, "title": clip(b.Label, 24)})
		}
		req["type"], req["interactive"] = "interactive", map[string]any{"type": "list", "body": map[string]string{"text": clip(body, 4096)},
			"action": map[string]any{"button": "Choose", "sections": []any{map[string]any{"title": "Options", "rows": rows}}}}
	}
	var res struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	if err := c.call(ctx, req, &res); err != nil {
		return "", err
	}
	if len(res.Messages) == 0 {
		return "", nil
	}
	return res.Messages[0].ID, nil
}

// TextLimit implements channel.Channel.
func (c *Channel) TextLimit() int { return TextLimit }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// retryable are the Cloud API's error codes that a later try may get
// past: rate limits and throughput.
var retryable = map[int]bool{4: true, 80007: true, 130429: true, 131048: true, 131056: true, 133016: true, 1: true, 2: true}

func (c *Channel) call(ctx context.Context, req, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return &channel.SendError{Permanent: true, Err: err}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.APIURL+"/"+c.cfg.PhoneNumberID+"/messages", bytes.NewReader(b))
	if err != nil {
		return &channel.SendError{Permanent: true, Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+c.cfg.AccessToken)
	res, err := c.cfg.Client.Do(hr)
	if err != nil {
		return &channel.SendError{Err: fmt.Errorf("whatsapp messages: %w", err)}
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		se := channel.StatusError(res.StatusCode, channel.RetryAfter(res.Header, time.Now()),
			fmt.Errorf("whatsapp messages: %s (code %d)", e.Error.Message, e.Error.Code))
		if retryable[e.Error.Code] {
			se.Permanent = false
		}
		return se
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &channel.SendError{Permanent: true, Err: fmt.Errorf("whatsapp messages: the answer: %w", err)}
	}
	return nil
}

var (
	boldMD   = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)
	headMD   = regexp.MustCompile(`(?m)^#{1,6}\s+(.+)$`)
	strikeMD = regexp.MustCompile(`~~([^~\n]+)~~`)
	linkMD   = regexp.MustCompile(`\[([^\]\n]+)\]\((https?://[^)\s]+)\)`)
)

// Format writes Markdown as WhatsApp's formatting: *bold* (from **bold**
// and headings), ~strike~, a link as its text and URL; code as written.
func Format(md string) string {
	s := boldMD.ReplaceAllString(md, "*$1*")
	s = headMD.ReplaceAllString(s, "*$1*")
	s = strikeMD.ReplaceAllString(s, "~$1~")
	return linkMD.ReplaceAllString(s, "$1 ($2)")
}

// Check gets the business number: the token works for it.
func (c *Channel) Check(ctx context.Context) (string, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.APIURL+"/"+c.cfg.PhoneNumberID+"?fields=display_phone_number,verified_name", nil)
	if err != nil {
		return "", err
	}
	hr.Header.Set("Authorization", "Bearer "+c.cfg.AccessToken)
	res, err := c.cfg.Client.Do(hr)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out struct {
		Number string `json:"display_phone_number"`
		Name   string `json:"verified_name"`
		Error  struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&out)
	if res.StatusCode/100 != 2 {
		return "", fmt.Errorf("whatsapp: phone number %s: %d %s", c.cfg.PhoneNumberID, res.StatusCode, out.Error.Message)
	}
	return fmt.Sprintf("number %s (%s)", out.Number, out.Name), nil
}

// Download fetches a media: its id gives its URL (GET /MEDIA_ID), whose
// bytes need the access token too, at most limit bytes.
func (c *Channel) Download(ctx context.Context, a channel.Attachment, limit int64) ([]byte, string, error) {
	get := func(url string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.cfg.AccessToken)
		return c.cfg.Client.Do(req)
	}
	res, err := get(c.cfg.APIURL + "/" + a.Ref)
	if err != nil {
		return nil, "", err
	}
	var m struct {
		URL      string `json:"url"`
		MimeType string `json:"mime_type"`
		FileSize int64  `json:"file_size"`
	}
	err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&m)
	res.Body.Close()
	switch {
	case res.StatusCode/100 != 2:
		return nil, "", fmt.Errorf("media %s: %d", a.Ref, res.StatusCode)
	case err != nil || m.URL == "":
		return nil, "", fmt.Errorf("media %s: no URL", a.Ref)
	case m.FileSize > limit:
		return nil, "", fmt.Errorf("%d bytes, more than the %d taken", m.FileSize, limit)
	}
	res, err = get(m.URL)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return nil, "", fmt.Errorf("media %s: %d", a.Ref, res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("more than the %d bytes taken", limit)
	}
	return data, m.MimeType, nil
}
