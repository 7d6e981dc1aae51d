// Package slack is the Slack channel, with github.com/slack-go/slack:
// the Events API (signed with the app's signing secret; url_verification
// answered; a retry, X-Slack-Retry-Num, is the same message), block
// actions from the interactivity endpoint (the same URL may serve both),
// chat.postMessage in the message's thread and chat.update, Block Kit
// buttons.
//
// In a channel, a person's message starts a thread the agent answers in:
// each thread is a conversation of its own (NAME:CHANNEL:THREAD_TS). A
// direct message's conversation is the whole chat.
package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/agentrt/agentrt/channel"
)

// TextLimit is the most characters the channel puts in a message (Slack
// takes more, but truncates past 40,000 and advises 4,000).
const TextLimit = 4000

// Config configures a Slack channel.
type Config struct {
	// BotToken is the app's bot token (xoxb-…); SigningSecret the app's
	// signing secret. Both required.
	BotToken, SigningSecret string
	// APIURL is the Web API's base URL ("https://slack.com/api/" when
	// empty).
	APIURL string
	Client *http.Client
}

// Channel is a Slack channel.
type Channel struct {
	cfg Config
	api *slack.Client
}

// New makes a Slack channel.
func New(cfg Config) (*Channel, error) {
	if cfg.BotToken == "" || cfg.SigningSecret == "" {
		return nil, errors.New("slack: bot_token and signing_secret are required")
	}
	opts := []slack.Option{}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(strings.TrimRight(cfg.APIURL, "/")+"/"))
	}
	if cfg.Client != nil {
		opts = append(opts, slack.OptionHTTPClient(cfg.Client))
	}
	return &Channel{cfg: cfg, api: slack.New(cfg.BotToken, opts...)}, nil
}

// Receive verifies a request's signature (X-Slack-Signature over the
// timestamp and the body, within five minutes) and reads it: the Events
// API's url_verification (answered with its challenge) and messages; the
// interactivity endpoint's block actions (form data).
func (c *Channel) Receive(r *channel.Request, now time.Time) (*channel.Received, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("slack: want POST, got %s", r.Method)
	}
	sv, err := slack.NewSecretsVerifier(r.Header, c.cfg.SigningSecret)
	if err != nil {
		return nil, &channel.Refused{Reason: "slack signature: " + err.Error()}
	}
	if _, err := sv.Write(r.Body); err != nil {
		return nil, &channel.Refused{Reason: "slack signature: " + err.Error()}
	}
	if err := sv.Ensure(); err != nil {
		return nil, &channel.Refused{Reason: "slack signature: " + err.Error()}
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return c.interaction(r.Body)
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(r.Body), slackevents.OptionNoVerifyToken())
	if err != nil {
		return nil, fmt.Errorf("slack: the body is not an event: %w", err)
	}
	got := &channel.Received{}
	switch ev.Type {
	case slackevents.URLVerification:
		var v slackevents.ChallengeResponse
		if err := json.Unmarshal(r.Body, &v); err != nil {
			return nil, fmt.Errorf("slack: url_verification: %w", err)
		}
		got.Response = &channel.Response{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(v.Challenge)}
	case slackevents.CallbackEvent:
		switch e := ev.InnerEvent.Data.(type) {
		case *slackevents.MessageEvent:
			if e.BotID != "" || (e.SubType != "" && e.SubType != "file_share") || e.User == "" {
				got.Ignored++ // the bot's own, an edit, a join, …
				break
			}
			m := message(e.Channel, e.ChannelType, e.User, e.TimeStamp, e.ThreadTimeStamp, e.Text)
			if e.Message != nil {
				for _, f := range e.Message.Files {
					m.Attachments = append(m.Attachments, channel.Attachment{Ref: f.URLPrivateDownload, Name: f.Name, Type: f.Mimetype, Size: int64(f.Size)})
				}
			}
			got.Messages = append(got.Messages, m)
		case *slackevents.AppMentionEvent:
			if e.BotID != "" || e.User == "" {
				got.Ignored++
				break
			}
			got.Messages = append(got.Messages, message(e.Channel, "channel", e.User, e.TimeStamp, e.ThreadTimeStamp, e.Text))
		default:
			got.Ignored++
		}
	default:
		got.Ignored++
	}
	return got, nil
}

// message is an inbound message: its id the channel and ts (a message
// and its app_mention are one), its conversation the thread it is in or
// starts — a direct message's, the chat.
func message(ch, chType, user, ts, threadTS, text string) channel.Inbound {
	m := channel.Inbound{ID: ch + ":" + ts, Sender: user, Conversation: ch, Text: text}
	if chType != "im" {
		m.Thread = threadTS
		if m.Thread == "" {
			m.Thread = ts
		}
	}
	return m
}

// interaction reads a block action (a button pressed).
func (c *Channel) interaction(body []byte) (*channel.Received, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("slack: the form: %w", err)
	}
	var ic slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &ic); err != nil {
		return nil, fmt.Errorf("slack: the payload: %w", err)
	}
	got := &channel.Received{}
	if ic.Type != slack.InteractionTypeBlockActions || len(ic.ActionCallback.BlockActions) == 0 {
		got.Ignored++
		return got, nil
	}
	a := ic.ActionCallback.BlockActions[0]
	ts := ic.Container.MessageTs
	if ts == "" {
		ts = ic.Message.Timestamp
	}
	cl := channel.Click{ID: ic.TriggerID + ":" + a.ActionTs, Sender: ic.User.ID, Conversation: ic.Channel.ID,
		Thread: ic.Message.ThreadTimestamp, Message: ts, Data: a.Value, Reply: ic.ResponseURL}
	if ic.Channel.ID == "" {
		cl.Conversation = ic.Container.ChannelID
	}
	if strings.HasPrefix(cl.Conversation, "D") {
		cl.Thread = "" // a direct message: no threads
	}
	got.Clicks = append(got.Clicks, cl)
	return got, nil
}

// blocks are a message's Block Kit blocks: its text, and its buttons.
func blocks(m channel.Message) []slack.Block {
	out := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, Mrkdwn(m.Text), false, false), nil, nil)}
	if len(m.Buttons) > 0 {
		var els []slack.BlockElement
		for i, b := range m.Buttons {
			el := slack.NewButtonBlockElement(fmt.Sprintf("agentrt_%d", i), b.Data, slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false))
			switch b.Style {
			case "primary":
				el.Style = slack.StylePrimary
			case "danger":
				el.Style = slack.StyleDanger
			}
			els = append(els, el)
		}
		out = append(out, slack.NewActionBlock("agentrt_actions", els...))
	}
	return out
}

// Send posts a message with chat.postMessage, in the conversation's
// thread.
func (c *Channel) Send(ctx context.Context, to channel.Address, m channel.Message) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(Mrkdwn(m.Text), false), slack.MsgOptionBlocks(blocks(m)...)}
	if to.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(to.Thread))
	}
	_, ts, err := c.api.PostMessageContext(ctx, to.Conversation, opts...)
	if err != nil {
		return "", sendError("chat.postMessage", err)
	}
	return ts, nil
}

// Edit changes a message with chat.update.
func (c *Channel) Edit(ctx context.Context, to channel.Address, ref string, m channel.Message) error {
	_, _, _, err := c.api.UpdateMessageContext(ctx, to.Conversation, ref, slack.MsgOptionText(Mrkdwn(m.Text), false), slack.MsgOptionBlocks(blocks(m)...))
	if err != nil {
		return sendError("chat.update", err)
	}
	return nil
}

// TextLimit implements channel.Channel.
func (c *Channel) TextLimit() int { return TextLimit }

// AckWithin is how long Slack waits for a request's answer: https://api.slack.com/apis/events-api#responding (3 seconds, else it retries).
func (c *Channel) AckWithin() time.Duration { return 3 * time.Second }

// sendError classifies a Web API failure: rate limits wait as Slack says;
// a status the platform may get over is tried again; Slack's own errors
// (channel_not_found, not_in_channel, invalid_auth, …) are not.
func sendError(method string, err error) error {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return &channel.SendError{Status: http.StatusTooManyRequests, RetryAfter: rl.RetryAfter, Err: fmt.Errorf("slack %s: %w", method, err)}
	case errors.As(err, &sc):
		return channel.StatusError(sc.Code, 0, fmt.Errorf("slack %s: %w", method, err))
	case errors.As(err, &se):
		return &channel.SendError{Permanent: true, Err: fmt.Errorf("slack %s: %s", method, se.Err)}
	}
	return &channel.SendError{Err: fmt.Errorf("slack %s: %w", method, err)}
}

// Check calls auth.test: the bot token works, for which team and bot.
func (c *Channel) Check(ctx context.Context) (string, error) {
	r, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return "", sendError("auth.test", err)
	}
	return fmt.Sprintf("bot %s (%s) of team %s", r.User, r.UserID, r.Team), nil
}

// Download fetches a file a person shared (its url_private_download,
// with the bot's token: the files:read scope), at most limit bytes.
func (c *Channel) Download(ctx context.Context, a channel.Attachment, limit int64) ([]byte, string, error) {
	if !strings.HasPrefix(a.Ref, "https://") && !strings.HasPrefix(a.Ref, "http://") {
		return nil, "", fmt.Errorf("no download URL")
	}
	var buf limited
	buf.max = limit
	if err := c.api.GetFileContext(ctx, a.Ref, &buf); err != nil {
		return nil, "", err
	}
	return buf.b, "", nil
}

// limited is a writer that takes at most max bytes.
type limited struct {
	b   []byte
	max int64
}

func (l *limited) Write(p []byte) (int, error) {
	if int64(len(l.b)+len(p)) > l.max {
		return 0, fmt.Errorf("more than the %d bytes taken", l.max)
	}
	l.b = append(l.b, p...)
	return len(p), nil
}
