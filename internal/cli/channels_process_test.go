package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/channel/channeltest"
	"github.com/agentrt/agentrt/channel/telegram"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
)

// A Telegram channel on agentrt serve (SQLite) through kill -9 at each
// point where a message can be lost: after the 2xx and before its turn,
// during the turn, and between the answer's send and its mark. Every
// message Telegram had a 2xx for is answered; the answer the process was
// killed in the middle of sending is sent again (the Bot API has no
// idempotency key: docs/channels.md says so).
func TestChannelThroughKills(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	api := channeltest.NewTelegramAPI(t, telegramToken)
	e := newEnv(t, "", nil)
	base, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	// config writes a config whose model says replies (YAML list items),
	// with the conversations' debounce, and starts agentrt serve on it.
	n := 0
	start := func(debounce string, replies ...string) *serveProc {
		t.Helper()
		n++
		script := fmt.Sprintf("m%d.yaml", n)
		writeFile(t, filepath.Join(e.dir, script), "replies:\n"+strings.Join(replies, ""))
		e.config = filepath.Join(e.dir, fmt.Sprintf("agentrt%d.yaml", n))
		writeFile(t, e.config, string(base)+"lease_ttl: 2s\n"+telegramConfig(script, api.URL, debounce))
		return startServe(t, e, nil)
	}
	post := func(s *serveProc, update string) {
		t.Helper()
		if code := postUpdate(t, s, update, "sek"); code != 200 {
			t.Fatalf("the update: %d", code)
		}
	}
	kill := func(s *serveProc) {
		t.Helper()
		s.signal(syscall.SIGKILL)
		s.wait()
	}
	sent := func() []string {
		var out []string
		for _, m := range api.Of("sendMessage") {
			out = append(out, m["text"].(string))
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(procTimeout)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen; sent: %q", what, sent())
			}
			time.Sleep(20 * time.Millisecond) // polls the fake platform; orders nothing
		}
	}

	// 1. Killed after the 2xx, before the turn (a debounce of an hour).
	s := start("1h", "  - text: never said\n")
	post(s, channeltest.TelegramUpdate(1, 10, "one"))
	kill(s)
	s = start("1ms", "  - text: answer one\n")
	waitFor("the first answer", func() bool { return len(sent()) == 1 })
	// Marked sent (the hub counts a delivery once it is): killed before
	// that, the answer would be sent again — step 3's case, not this one's.
	waitFor("the first answer marked sent", func() bool {
		return strings.Contains(metricsOf(t, s), `agentrt_channel_deliveries_total{outcome="delivered"} 1`)
	})
	kill(s)

	// 2. Killed during the turn (the model takes an hour).
	s = start("1ms", "  - text: answer one\n", "  - text: never said\n    delay: 1h\n")
	post(s, channeltest.TelegramUpdate(2, 11, "two"))
	waitFor("the second turn's model call", func() bool { return modelStarted(t, s, "tg:111111111") >= 2 })
	kill(s)
	hold := make(chan struct{})
	api.Set(func() {
		api.Hold = func(method string, n int) chan struct{} {
			if method == "sendMessage" && n >= 3 {
				return hold
			}
			return nil
		}
	})
	s = start("1ms", "  - text: answer one\n", "  - text: answer two\n", "  - text: answer three\n")
	waitFor("the second answer, once the lease expired", func() bool { return len(sent()) == 2 })

	// 3. Killed between the answer's send and its mark: the platform has
	// it, the outbox does not know.
	post(s, channeltest.TelegramUpdate(3, 12, "three"))
	waitFor("the third answer's send", func() bool { return len(sent()) == 3 })
	kill(s)
	close(hold)
	api.Set(func() { api.Hold = nil })
	s = start("1ms", "  - text: answer one\n", "  - text: answer two\n", "  - text: answer three\n")
	waitFor("the third answer again, once the claim lapsed", func() bool { return len(sent()) == 4 })
	// What the channel did shows in the metrics: a bad secret is counted.
	if code := postUpdate(t, s, channeltest.TelegramUpdate(9, 19, "x"), "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong secret: %d", code)
	}
	// The platform has the answer a moment before the hub counts it (it
	// counts once it is marked sent).
	delivered := `agentrt_channel_deliveries_total{outcome="delivered"} 1`
	waitFor("the delivery counted", func() bool { return strings.Contains(metricsOf(t, s), delivered) })
	if m := metricsOf(t, s); !strings.Contains(m, `agentrt_channel_requests_total{outcome="refused"} 1`) {
		t.Errorf("/metrics lacks the refused request: %s", m)
	}
	s.stopOK()
	want := []string{"answer one", "answer two", "answer three", "answer three"}
	if got := sent(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %q, want %q", got, want)
	}
	// Each message was one input.
	r := e.must(0, "inbox", "list", "--source", "tg:111111111")
	if c := strings.Count(r.out, "answered"); c != 3 {
		t.Errorf("the inbox has %d answered inputs, want 3:\n%s", c, r.out)
	}
}

// telegramToken is the bot's in the process tests.
const telegramToken = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"

// telegramConfig is the config of an agent whose scripted model plays
// script, on a Telegram channel "tg" (secret token "sek") whose Bot API is
// at api, its conversations debounced as said.
func telegramConfig(script, api, debounce string) string {
	return fmt.Sprintf(`server: {shutdown_grace: 1s}
models:
  m: {provider: scripted, script: %s}
agents:
  assistant: {model: m}
channels:
  tg:
    kind: telegram
    bot_token: "%s"
    secret_token: sek
    api_url: %s
    debounce: %s
`, script, telegramToken, api, debounce)
}

// postUpdate posts a Telegram update to s's channel "tg" with the secret
// token given, and returns the status.
func postUpdate(t *testing.T, s *serveProc, update, secret string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/v1/channels/tg/webhook", strings.NewReader(update))
	req.Header.Set(telegram.SecretHeader, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// modelStarted counts the model calls in session id's log.
func modelStarted(t *testing.T, s *serveProc, id string) int {
	t.Helper()
	res, err := http.Get(s.url + "/v1/sessions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	if res.StatusCode != 200 || json.NewDecoder(res.Body).Decode(&page) != nil {
		return 0
	}
	n := 0
	for _, ev := range page.Events {
		if ev.Type == "model_started" {
			n++
		}
	}
	return n
}

// Two replicas of agentrt serve on one Postgres, the platform posting
// each conversation's burst of messages to both: every conversation is
// answered once, in one turn that read its three messages.
func TestChannelReplicasOnPostgres(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve twice")
	dsn, _ := pgtest.Schema(t)
	api := channeltest.NewTelegramAPI(t, telegramToken)
	e := newEnvStore(t, dsn, telegramConfig("m.yaml", api.URL, "1s"), map[string]string{"m.yaml": "replies:\n  - text: one answer\n    expect: {last_user_contains: third}\n"})
	a, b := startServe(t, e, nil), startServe(t, e, nil)
	const chats = 12
	for i := range chats {
		for j, text := range []string{"first", "second", "third"} {
			s := a
			if (i+j)%2 == 1 {
				s = b
			}
			if code := postUpdate(t, s, channeltest.TelegramUpdateIn(int64(1000+i), 3*i+j, 100+j, text), "sek"); code != 200 {
				t.Fatalf("an update: %d", code)
			}
		}
	}
	deadline := time.Now().Add(procTimeout)
	for len(api.Of("sendMessage")) < chats {
		if time.Now().After(deadline) {
			t.Fatalf("%d answers of %d", len(api.Of("sendMessage")), chats)
		}
		time.Sleep(20 * time.Millisecond) // polls the fake platform; orders nothing
	}
	a.stopOK()
	b.stopOK()
	per := map[float64]int{}
	for _, m := range api.Of("sendMessage") {
		if m["text"] != "one answer" {
			t.Errorf("an answer: %v", m)
		}
		per[m["chat_id"].(float64)]++
	}
	for chat, n := range per {
		if n != 1 {
			t.Errorf("chat %v got %d answers", chat, n)
		}
	}
	if len(per) != chats {
		t.Errorf("%d chats answered, want %d", len(per), chats)
	}
}

// agentrt channels check calls each channel's platform: a Telegram bot
// whose token works and whose webhook is set is ok; a webhook whose reply
// URL answers 500, and a Telegram API that cannot be reached, are not —
// and the bot's token, part of every Bot API URL, is not printed.
func TestChannelsCheck(t *testing.T) {
	t.Parallel()
	const token = telegramToken
	api := channeltest.NewTelegramAPI(t, token)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(down.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	e := newEnv(t, demoConfig+fmt.Sprintf(`channels:
  tg: {kind: telegram, bot_token: "%s", secret_token: s, api_url: %s}
  desk: {kind: webhook, secret: s, reply_url: %s}
  lost: {kind: telegram, bot_token: "%s", secret_token: s, api_url: %s}
`, token, api.URL, down.URL, token, gone.URL), nil)
	r := e.run("channels", "check")
	if r.code != cli.ExitFailed {
		t.Errorf("exit %d, want %d", r.code, cli.ExitFailed)
	}
	for _, want := range []string{
		"tg (telegram): ok, bot @support_bot; webhook https://agents.example.com/v1/channels/tg/webhook, 0 updates pending",
		"desk (webhook): does not work: 500",
		"lost (telegram): does not work:",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the check's output lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out+r.err, token) {
		t.Errorf("the bot's token was printed:\n%s%s", r.out, r.err)
	}
	if !strings.Contains(r.err, "2 of 3 channel(s) do not work") {
		t.Errorf("stderr: %s", r.err)
	}
}

// A channel whose secret's variable is not set stops agentrt serve and
// agentrt channels check, which need it, with its line; the commands that
// do not serve the platforms run.
func TestChannelSecretsNeededByServeOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"channels:\n  desk:\n    kind: webhook\n    secret: ${DESK_SECRET_NOT_SET}\n    reply_url: http://127.0.0.1:1/x\n", nil)
	e.must(cli.ExitOK, "sessions", "list")
	for _, args := range [][]string{{"channels", "check"}, {"serve", "--addr", "127.0.0.1:0"}} {
		r := e.run(args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, "channels.desk: secret is empty because ${DESK_SECRET_NOT_SET} is not set (a webhook channel needs it)") {
			t.Errorf("%v: %v", args, r)
		}
	}
}

// metricsOf is what s's /metrics says.
func metricsOf(t *testing.T, s *serveProc) string {
	t.Helper()
	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
