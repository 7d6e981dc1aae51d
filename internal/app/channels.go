package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/discord"
	"github.com/agentrt/agentrt/channel/slack"
	"github.com/agentrt/agentrt/channel/telegram"
	"github.com/agentrt/agentrt/channel/webhook"
	"github.com/agentrt/agentrt/channel/whatsapp"
	"github.com/agentrt/agentrt/config"
)

// BuildChannels builds the hub of the configured channels, for agentrt
// serve (nil when there are none): only a command that serves the
// platforms needs their credentials, which it checks here. Its log is
// log.
func (a *App) BuildChannels(log *slog.Logger) (*channel.Hub, error) {
	cfg := a.Config
	names := cfg.ChannelNames()
	if len(names) == 0 {
		return nil, nil
	}
	gw, err := a.NeedGateway()
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckChannels(); err != nil {
		return nil, err
	}
	var binds []channel.Binding
	for _, name := range names {
		cc := cfg.Channels[name]
		ch, err := NewChannel(cc, a.opts.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("channel %q: %w", name, err)
		}
		binds = append(binds, channel.Binding{Name: name, Channel: ch, Agent: cc.Agent, Allow: cc.Allow, Refusal: cc.Refusal, Approvers: cc.Approvers, AckWithin: cc.AckWithin.Std(),
			Stream: cc.Stream != nil && *cc.Stream, StreamEvery: cc.StreamEvery.Std()})
	}
	// A claim on a message lasts as a session's lease does: as long as
	// another process waits before it takes over a dead one's work.
	claim := cfg.LeaseTTL.Std()
	if claim <= 0 {
		claim = agentrt.DefaultLeaseTTL
	}
	return channel.New(channel.Config{Runner: a.Runner, Gateway: gw, Channels: binds, Tenant: cfg.Tenant, Now: a.opts.Now,
		ClaimFor: claim, Log: log})
}

// NewChannel makes the channel an entry of channels configures; client
// sends to the platform (nil: one with a 30 s timeout).
func NewChannel(cc config.Channel, client *http.Client) (channel.Channel, error) {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	switch cc.Kind {
	case config.ChannelTelegram:
		return telegram.New(telegram.Config{BotToken: cc.BotToken, SecretToken: cc.SecretToken, APIURL: cc.APIURL, Client: client})
	case config.ChannelSlack:
		return slack.New(slack.Config{BotToken: cc.BotToken, SigningSecret: cc.SigningSecret, APIURL: cc.APIURL, Client: client})
	case config.ChannelDiscord:
		return discord.New(discord.Config{PublicKey: cc.PublicKey, BotToken: cc.BotToken, APIURL: cc.APIURL, Client: client})
	case config.ChannelWhatsApp:
		return whatsapp.New(whatsapp.Config{AccessToken: cc.AccessToken, AppSecret: cc.AppSecret, VerifyToken: cc.VerifyToken,
			PhoneNumberID: cc.PhoneNumberID, APIURL: cc.APIURL, Client: client})
	case config.ChannelWebhook:
		return webhook.New(webhook.Config{Secret: cc.Secret, ReplyURL: cc.ReplyURL, Client: client})
	}
	return nil, fmt.Errorf("kind %q is not one this build serves", cc.Kind)
}
