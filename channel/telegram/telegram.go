// Package telegram is the Telegram channel, over the Bot API's HTTP
// interface (https://core.telegram.org/bots/api): updates come to the
// webhook set with setWebhook, checked by its secret_token (the
// X-Telegram-Bot-Api-Secret-Token header); messages go out with
// sendMessage (HTML), editMessageText, sendChatAction and inline
// keyboards, whose presses come back as callback queries.
package telegram

import (
	"bytes"
	"context"
	"crypto/subtle"
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

// SecretHeader carries the webhook's secret token.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// DefaultAPIURL is the Bot API's.
const DefaultAPIURL = "https://api.telegram.org"

// TextLimit is the most characters a message holds.
const TextLimit = 4096

// Config configures a Telegram channel.
type Config struct {
	// BotToken is the bot's token (from @BotFather). Required.
	BotToken string
	// SecretToken is the webhook's secret token (setWebhook's
	// secret_token). Required.
	SecretToken string
	// APIURL is the Bot API's base URL; empty: DefaultAPIURL.
	APIURL string
	Client *http.Client
}

// Channel is a Telegram channel.
type Channel struct {
	cfg  Config
	base string // APIURL + "/bot" + token + "/"
}

// New makes a Telegram channel.
func New(cfg Config) (*Channel, error) {
	if cfg.BotToken == "" || cfg.SecretToken == "" {
		return nil, errors.New("telegram: bot_token and secret_token are required")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	api := strings.TrimRight(cfg.APIURL, "/")
	if api == "" {
		api = DefaultAPIURL
	}
	return &Channel{cfg: cfg, base: api + "/bot" + cfg.BotToken + "/"}, nil
}

// User, Chat, Message, CallbackQuery and Update are the parts of the Bot
// API's Update object the channel reads.
type (
	User struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		FirstName string `json:"first_name"`
		Username  string `json:"username,omitempty"`
	}
	Chat struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	Message struct {
		MessageID       int64  `json:"message_id"`
		MessageThreadID int64  `json:"message_thread_id,omitempty"`
		IsTopicMessage  bool   `json:"is_topic_message,omitempty"`
		From            *User  `json:"from,omitempty"`
		Chat            Chat   `json:"chat"`
		Date            int64  `json:"date"`
		Text            string `json:"text,omitempty"`
		Caption         string `json:"caption,omitempty"`
		// Photo is the sizes of a photo, the largest last; Document a
		// file.
		Photo []struct {
			FileID   string `json:"file_id"`
			FileSize int64  `json:"file_size"`
		} `json:"photo,omitempty"`
		Document *struct {
			FileID   string `json:"file_id"`
			FileName string `json:"file_name"`
			MimeType string `json:"mime_type"`
			FileSize int64  `json:"file_size"`
		} `json:"document,omitempty"`
	}
	CallbackQuery struct {
		ID      string   `json:"id"`
		From    User     `json:"from"`
		Message *Message `json:"message,omitempty"`
		Data    string   `json:"data,omitempty"`
	}
	Update struct {
		UpdateID      int64          `json:"update_id"`
		Message       *Message       `json:"message,omitempty"`
		CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
	}
)

// Receive checks the secret token and reads an update: a message, or a
// press of an inline keyboard's button; other updates (edits, channel
// posts, members joining) are acknowledged and ignored.
func (c *Channel) Receive(r *channel.Request, now time.Time) (*channel.Received, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("telegram: want POST, got %s", r.Method)
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(SecretHeader)), []byte(c.cfg.SecretToken)) != 1 {
		return nil, &channel.Refused{Reason: "the secret token (" + SecretHeader + ") does not match"}
	}
	var u Update
	if err := json.Unmarshal(r.Body, &u); err != nil {
		return nil, fmt.Errorf("telegram: the body is not an update: %w", err)
	}
	got := &channel.Received{}
	switch {
	case u.Message != nil && u.Message.From != nil && !u.Message.From.IsBot:
		m := u.Message
		text := m.Text
		if text == "" {
			text = m.Caption // a photo's or a file's
		}
		in := channel.Inbound{ID: strconv.FormatInt(m.Chat.ID, 10) + ":" + strconv.FormatInt(m.MessageID, 10),
			Sender: strconv.FormatInt(m.From.ID, 10), SenderName: name(m.From),
			Conversation: strconv.FormatInt(m.Chat.ID, 10), Text: text}
		if m.IsTopicMessage && m.MessageThreadID != 0 {
			in.Thread = strconv.FormatInt(m.MessageThreadID, 10)
		}
		if n := len(m.Photo); n > 0 {
			p := m.Photo[n-1]
			in.Attachments = append(in.Attachments, channel.Attachment{Ref: p.FileID, Name: "photo.jpg", Type: "image/jpeg", Size: p.FileSize})
		}
		if d := m.Document; d != nil {
			in.Attachments = append(in.Attachments, channel.Attachment{Ref: d.FileID, Name: d.FileName, Type: d.MimeType, Size: d.FileSize})
		}
		got.Messages = append(got.Messages, in)
	case u.CallbackQuery != nil && u.CallbackQuery.Message != nil:
		q := u.CallbackQuery
		cl := channel.Click{ID: q.ID, Sender: strconv.FormatInt(q.From.ID, 10), Conversation: strconv.FormatInt(q.Message.Chat.ID, 10),
			Message: strconv.FormatInt(q.Message.MessageID, 10), Data: q.Data, Reply: q.ID}
		if q.Message.IsTopicMessage && q.Message.MessageThreadID != 0 {
			cl.Thread = strconv.FormatInt(q.Message.MessageThreadID, 10)
		}
		got.Clicks = append(got.Clicks, cl)
	default:
		got.Ignored++
	}
	return got, nil
}

func name(u *User) string {
	if u.Username != "" {
		return u.Username
	}
	return u.FirstName
}

// keyboard is an inline keyboard: the buttons in one row.
func keyboard(bs []channel.Button) any {
	if len(bs) == 0 {
		return nil
	}
	row := make([]map[string]string, len(bs))
	for i, b := range bs {
		row[i] = map[string]string{"text": b.Label, "callback_data": b.Data}
	}
	return map[string]any{"inline_keyboard": [][]map[string]string{row}}
}

func chatID(to channel.Address) (int64, int64, error) {
	id, err := strconv.ParseInt(to.Conversation, 10, 64)
	if err != nil {
		return 0, 0, &channel.SendError{Permanent: true, Err: fmt.Errorf("chat id %q is not a number", to.Conversation)}
	}
	var thread int64
	if to.Thread != "" {
		if thread, err = strconv.ParseInt(to.Thread, 10, 64); err != nil {
			return 0, 0, &channel.SendError{Permanent: true, Err: fmt.Errorf("thread id %q is not a number", to.Thread)}
		}
	}
	return id, thread, nil
}

// Send posts a message with sendMessage, its Markdown as Telegram's HTML.
func (c *Channel) Send(ctx context.Context, to channel.Address, m channel.Message) (string, error) {
	id, thread, err := chatID(to)
	if err != nil {
		return "", err
	}
	req := map[string]any{"chat_id": id, "text": HTML(m.Text), "parse_mode": "HTML"}
	if thread != 0 {
		req["message_thread_id"] = thread
	}
	if kb := keyboard(m.Buttons); kb != nil {
		req["reply_markup"] = kb
	}
	var res struct {
		MessageID int64 `json:"message_id"`
	}
	if err := c.call(ctx, "sendMessage", req, &res); err != nil {
		return "", err
	}
	return strconv.FormatInt(res.MessageID, 10), nil
}

// Edit changes a message with editMessageText (its keyboard goes unless
// m has buttons).
func (c *Channel) Edit(ctx context.Context, to channel.Address, ref string, m channel.Message) error {
	id, _, err := chatID(to)
	if err != nil {
		return err
	}
	mid, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		return &channel.SendError{Permanent: true, Err: fmt.Errorf("message id %q is not a number", ref)}
	}
	req := map[string]any{"chat_id": id, "message_id": mid, "text": HTML(m.Text), "parse_mode": "HTML"}
	if kb := keyboard(m.Buttons); kb != nil {
		req["reply_markup"] = kb
	}
	err = c.call(ctx, "editMessageText", req, nil)
	var se *channel.SendError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest && strings.Contains(se.Error(), "message is not modified") {
		// An edit sent again (after a crash, or a retry of a delivery
		// that edited first): the message says it already.
		return nil
	}
	return err
}

// Typing shows "typing…" with sendChatAction.
func (c *Channel) Typing(ctx context.Context, to channel.Address) error {
	id, thread, err := chatID(to)
	if err != nil {
		return err
	}
	req := map[string]any{"chat_id": id, "action": "typing"}
	if thread != 0 {
		req["message_thread_id"] = thread
	}
	return c.call(ctx, "sendChatAction", req, nil)
}

// Acknowledge answers a callback query, which stops the button's spinner.
func (c *Channel) Acknowledge(ctx context.Context, cl channel.Click, text string) error {
	req := map[string]any{"callback_query_id": cl.Reply}
	if text != "" {
		req["text"] = text
	}
	return c.call(ctx, "answerCallbackQuery", req, nil)
}

// TextLimit implements channel.Channel.
func (c *Channel) TextLimit() int { return TextLimit }

// call calls a Bot API method and decodes its result into out. A failure
// is a *channel.SendError: 429 with the parameters' retry_after.
func (c *Channel) call(ctx context.Context, method string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return &channel.SendError{Permanent: true, Err: err}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(body))
	if err != nil {
		return &channel.SendError{Permanent: true, Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := c.cfg.Client.Do(hr)
	if err != nil {
		return &channel.SendError{Err: fmt.Errorf("telegram %s: %w", method, redact(err, c.cfg.BotToken))}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return channel.StatusError(res.StatusCode, 0, fmt.Errorf("telegram %s: the answer is not JSON (%d)", method, res.StatusCode))
	}
	if !r.OK {
		status := cmpOr(r.ErrorCode, res.StatusCode)
		return channel.StatusError(status, time.Duration(r.Parameters.RetryAfter)*time.Second, fmt.Errorf("telegram %s: %s", method, r.Description))
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return &channel.SendError{Permanent: true, Err: fmt.Errorf("telegram %s: the result: %w", method, err)}
		}
	}
	return nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// redact keeps the bot's token (part of every URL) out of an error.
func redact(err error, token string) error {
	return errors.New(strings.ReplaceAll(err.Error(), token, "<bot_token>"))
}

// Check calls getMe (the token works) and getWebhookInfo (where Telegram
// sends the updates, and its last error).
func (c *Channel) Check(ctx context.Context) (string, error) {
	var me User
	if err := c.call(ctx, "getMe", map[string]any{}, &me); err != nil {
		return "", err
	}
	var wh struct {
		URL              string `json:"url"`
		PendingUpdates   int    `json:"pending_update_count"`
		LastErrorMessage string `json:"last_error_message"`
	}
	if err := c.call(ctx, "getWebhookInfo", map[string]any{}, &wh); err != nil {
		return "", err
	}
	s := fmt.Sprintf("bot @%s", me.Username)
	switch {
	case wh.URL == "":
		return "", fmt.Errorf("bot @%s has no webhook: call setWebhook with this channel's URL and secret_token", me.Username)
	case wh.LastErrorMessage != "":
		s += fmt.Sprintf("; webhook %s, %d updates pending, last error: %s", wh.URL, wh.PendingUpdates, wh.LastErrorMessage)
	default:
		s += fmt.Sprintf("; webhook %s, %d updates pending", wh.URL, wh.PendingUpdates)
	}
	return s, nil
}

// Download fetches a file: getFile gives its path, then the file is read
// from the Bot API's file URL (at most limit bytes; the Bot API serves
// files of up to 20 MB).
func (c *Channel) Download(ctx context.Context, a channel.Attachment, limit int64) ([]byte, string, error) {
	var f struct {
		FilePath string `json:"file_path"`
		FileSize int64  `json:"file_size"`
	}
	if err := c.call(ctx, "getFile", map[string]any{"file_id": a.Ref}, &f); err != nil {
		return nil, "", err
	}
	if f.FileSize > limit {
		return nil, "", fmt.Errorf("%d bytes, more than the %d taken", f.FileSize, limit)
	}
	url := strings.Replace(c.base, "/bot", "/file/bot", 1) + f.FilePath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	res, err := c.cfg.Client.Do(req)
	if err != nil {
		return nil, "", redact(err, c.cfg.BotToken)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("the file: %d", res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, "", redact(err, c.cfg.BotToken)
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("more than the %d bytes taken", limit)
	}
	return data, res.Header.Get("Content-Type"), nil
}
