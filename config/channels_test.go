package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A channels entry is read with the platform's own names; secrets come
// from the environment.
func TestChannels(t *testing.T) {
	t.Parallel()
	src := base + `channels:
  support:
    kind: telegram
    agent: a
    bot_token: ${TG_TOKEN}
    secret_token: ${TG_SECRET}
    allow: ["42", "-1001"]
    approvers: ["42"]
    refusal: Sorry, staff only.
    debounce: 1.5s
    prompts: answer
    ack_within: 5s
    stream: true
    stream_every: 2s
    api_url: http://127.0.0.1:9999
  hooks:
    kind: webhook
    secret: s
    reply_url: https://example.com/replies
`
	c, err := Parse("agentrt.yaml", []byte(src), func(k string) (string, bool) {
		v, ok := map[string]string{"TG_TOKEN": "123:abc", "TG_SECRET": "sek"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Channel{Kind: "telegram", Agent: "a", BotToken: "123:abc", SecretToken: "sek", Allow: []string{"42", "-1001"},
		Approvers: []string{"42"}, Refusal: "Sorry, staff only.", APIURL: "http://127.0.0.1:9999"}
	want.Debounce, want.Prompts = Duration(1500_000_000), "answer"
	want.AckWithin, want.StreamEvery, want.Stream = Duration(5_000_000_000), Duration(2_000_000_000), new(bool)
	*want.Stream = true
	if diff := cmp.Diff(want, c.Channels["support"]); diff != "" {
		t.Errorf("support (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hooks", "support"}, c.ChannelNames()); diff != "" {
		t.Errorf("names: %s", diff)
	}
}

func TestChannelProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, src string
		env       map[string]string
		want      string
	}{
		{"unknown kind", base + "channels:\n  c: {kind: telegrm}\n",
			nil, `agentrt.yaml:6:13: channels.c.kind: unknown kind "telegrm"; did you mean telegram? (want discord, slack, telegram, webhook, whatsapp)`},
		{"no kind", base + "channels:\n  c: {bot_token: x}\n",
			nil, `agentrt.yaml:6:3: channels.c: kind is required (discord, slack, telegram, webhook, whatsapp)`},
		{"bad name", base + "channels:\n  a.b: {kind: webhook, secret: s, reply_url: http://x}\n",
			nil, `agentrt.yaml:6:3: channels.a.b: bad channel name "a.b": it names the channel's URL and sources, so use letters, digits, _ and - (at most 32)`},
		{"unknown agent", base + "channels:\n  c: {kind: webhook, agent: b, secret: s, reply_url: http://x}\n",
			nil, `agentrt.yaml:6:29: channels.c.agent: unknown agent "b"; did you mean a? (agents: a)`},
		{"bad reply_url", base + "channels:\n  c: {kind: webhook, secret: s, reply_url: ftp://x}\n",
			nil, `agentrt.yaml:6:44: channels.c.reply_url: bad URL "ftp://x": want an absolute http:// or https:// URL`},
		{"bad policy", base + "channels:\n  c: {kind: webhook, secret: s, reply_url: http://x, policy: quene}\n",
			nil, `agentrt.yaml:6:62: channels.c.policy: unknown policy "quene"; did you mean queue? (want interrupt, queue, steer, reject)`},
		{"bad prompts", base + "channels:\n  c: {kind: webhook, secret: s, reply_url: http://x, prompts: always}\n",
			nil, `agentrt.yaml:6:63: channels.c.prompts: unknown prompts "always" (want answer or policy)`},
		{"stream on whatsapp", base + "channels:\n  c: {kind: whatsapp, stream: true}\n",
			nil, `agentrt.yaml:6:23: channels.c.stream: a WhatsApp message cannot be edited: an answer cannot be streamed into one`},
		{"unknown key", base + "channels:\n  c: {kind: slack, bot_token: x, signing_secret: y, channel_id: z}\n",
			nil, `agentrt.yaml:6:53: channels.c.channel_id: unknown key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseErr(t, tt.src, tt.env)
			if len(got) < len(tt.want) || got[:len(tt.want)] != tt.want {
				t.Errorf("error:\n got: %s\nwant: %s…", got, tt.want)
			}
		})
	}
}

// A model's media are media types or kinds of them.
func TestModelMedia(t *testing.T) {
	t.Parallel()
	c, err := Parse("agentrt.yaml", []byte("models:\n  v: {provider: openai, model: gpt-4o, api_key: k, media: [image/*, application/pdf]}\nagents:\n  a: {model: v}\n"), nil)
	if err != nil || !cmp.Equal(c.Models["v"].Media, []string{"image/*", "application/pdf"}) {
		t.Fatalf("media: %+v %v", c.Models["v"].Media, err)
	}
	got := parseErr(t, "models:\n  v: {provider: openai, model: gpt-4o, api_key: k, media: [images]}\nagents:\n  a: {model: v}\n", nil)
	if want := `agentrt.yaml:2:59: models.v.media: "images" is not a media type (image/png) or a kind of them (image/*)`; got != want {
		t.Errorf("error:\n got: %s\nwant: %s", got, want)
	}
}

// A channel's credentials are checked by the commands that serve it
// (CheckChannels): a config whose secrets are not set still loads, for
// the commands that do not.
func TestCheckChannels(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, src, want string
	}{
		{"a secret missing", base + "channels:\n  c: {kind: slack, bot_token: x}\n",
			`agentrt.yaml:6:3: channels.c: signing_secret is required (a slack channel needs it)`},
		{"a secret from an unset variable", base + "channels:\n  c:\n    kind: telegram\n    bot_token: x\n    secret_token: ${TG_SECRET}\n",
			`agentrt.yaml:6:3: channels.c: secret_token is empty because ${TG_SECRET} is not set (a telegram channel needs it)`},
		{"whatsapp's four", base + "channels:\n  w: {kind: whatsapp, access_token: a, app_secret: b}\n",
			`agentrt.yaml:6:3: channels.w: verify_token is required (a whatsapp channel needs it)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse("agentrt.yaml", []byte(tt.src), func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatalf("the config does not load: %v", err)
			}
			err = c.CheckChannels()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckChannels: %v, want %s", err, tt.want)
			}
		})
	}
	c, err := Parse("agentrt.yaml", []byte(base+"channels:\n  h: {kind: webhook, secret: s, reply_url: http://x}\n"), nil)
	if err != nil || c.CheckChannels() != nil {
		t.Errorf("a complete channel: %v %v", err, c.CheckChannels())
	}
}
