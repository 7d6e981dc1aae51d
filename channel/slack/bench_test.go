package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentrt/agentrt/channel"
	"github.com/agentrt/agentrt/channel/channeltest"
	slackch "github.com/agentrt/agentrt/channel/slack"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

// quantiles reports the p50 and p99 of d, in milliseconds.
func quantiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkAck is how long Slack waits for its 200: a signed message
// event posted to the channel, verified, stored in the inbox (SQLite) and
// acknowledged (target=hub), beside a bare handler that verifies the same
// signature and writes the same row (target=floor). No turn runs (the
// debounce is an hour): this is the acknowledgement alone.
func BenchmarkAck(b *testing.B) {
	for _, target := range []string{"floor", "hub"} {
		b.Run("target="+target, func(b *testing.B) {
			var url string
			switch target {
			case "floor":
				store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "s.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { store.Close() })
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					sv, err := slack.NewSecretsVerifier(r.Header, signingSecret)
					if err == nil {
						_, _ = sv.Write(body)
						err = sv.Ensure()
					}
					if err != nil {
						w.WriteHeader(http.StatusUnauthorized)
						return
					}
					var ev struct {
						Event struct {
							Channel, User, Text, TS string
						} `json:"event"`
					}
					if json.Unmarshal(body, &ev) != nil {
						w.WriteHeader(http.StatusBadRequest)
						return
					}
					src := "sl:" + ev.Event.Channel + ":" + ev.Event.TS
					_, _, err = store.Submit(session.WithTenant(r.Context(), session.DefaultTenant), &session.InboxInput{ID: "in_" + ev.Event.TS,
						Source: src, SessionID: src, Key: ev.Event.Channel + ":" + ev.Event.TS,
						Parts: []session.InputPart{{Type: "text", Text: ev.Event.Text}}})
					if err != nil {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					w.WriteHeader(http.StatusOK)
				}))
				b.Cleanup(srv.Close)
				url = srv.URL + "/v1/channels/sl/events"
			case "hub":
				ch, err := slackch.New(slackch.Config{BotToken: "xoxb-test", SigningSecret: signingSecret, APIURL: "http://127.0.0.1:1/api"})
				if err != nil {
					b.Fatal(err)
				}
				g := channeltest.NewWith(b, channel.Binding{Name: "sl", Channel: ch}, gateway.Config{Debounce: time.Hour})
				url = g.Server.URL + "/v1/channels/sl/events"
			}
			client := &http.Client{}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				ts := fmt.Sprintf("1700000000.%06d", i)
				body := event("Ev"+strconv.Itoa(i), ts, "", "hello there")
				req, _ := http.NewRequest("POST", url, strings.NewReader(body))
				hdr := sign(time.Now(), body)
				for j := 0; j+1 < len(hdr); j += 2 {
					req.Header.Set(hdr[j], hdr[j+1])
				}
				start := time.Now()
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat = append(lat, time.Since(start))
				if res.StatusCode != 200 {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
			b.StopTimer()
			quantiles(b, lat)
		})
	}
}

// BenchmarkBurst: 1,000 conversations, each a burst of three messages
// sent back to back (32 senders at once), through the fake Slack into the
// hub (target=channel), or as the same 3,000 inputs given to the
// gateway's Submit (target=submit); each conversation's one turn answers
// its three (a debounce of 100 ms), and its answer goes from the outbox to
// the fake Slack either way. It reports the turns run (exactly 1,000), the
// answers delivered, the wall time until the last one, and the outbox's
// delivery lag: from the answer's commit to the platform's receipt. Run
// it with -benchtime 1x.
func BenchmarkBurst(b *testing.B) {
	const conversations, senders = 1000, 32
	for _, target := range []string{"submit", "channel"} {
		b.Run("target="+target, func(b *testing.B) {
			for range b.N {
				api := &webAPI{t: &testing.T{}}
				var mu sync.Mutex
				got := map[string]time.Time{} // thread_ts → when the answer came
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_ = r.ParseForm()
					mu.Lock()
					got[r.Form.Get("thread_ts")] = time.Now()
					mu.Unlock()
					api.ServeHTTP(w, r)
				}))
				ch, err := slackch.New(slackch.Config{BotToken: "xoxb-test", SigningSecret: signingSecret, APIURL: srv.URL + "/api"})
				if err != nil {
					b.Fatal(err)
				}
				g := channeltest.NewWith(b, channel.Binding{Name: "sl", Channel: ch}, gateway.Config{Debounce: 100 * time.Millisecond},
					scripted.Reply{Text: "answered", Expect: &scripted.Expect{LastUserContains: "third"}})
				ctx, cancel := context.WithCancel(context.Background())
				var delivering sync.WaitGroup
				delivering.Go(func() { _ = g.Hub.Run(ctx) })
				gw := g.Gateway
				start := time.Now()
				var next atomic.Int64
				var wg sync.WaitGroup
				for range senders {
					wg.Go(func() {
						for {
							i := next.Add(1) - 1
							if i >= conversations {
								return
							}
							ts := fmt.Sprintf("1700000000.%06d", i)
							for j, text := range []string{"first", "second", "third"} {
								if target == "submit" {
									src := "sl:C2147483705:" + ts
									if _, err := gw.Submit(channeltest.Ctx(), gateway.Input{Source: src, Text: text, Key: fmt.Sprint(i, j)}); err != nil {
										b.Error(err)
									}
									continue
								}
								mts := fmt.Sprintf("1700000000.%06d", i)
								if j > 0 {
									mts = fmt.Sprintf("1700000001.%06d%d", i, j)
								}
								thread := ""
								if j > 0 {
									thread = ts
								}
								body := event(fmt.Sprint("Ev", i, j), mts, thread, text)
								if code, _ := g.Post("events", body, sign(time.Now(), body)...); code != 200 {
									b.Errorf("status %d", code)
								}
							}
						}
					})
				}
				wg.Wait()
				deadline := time.Now().Add(5 * time.Minute)
				for {
					mu.Lock()
					delivered := len(got)
					mu.Unlock()
					if delivered == conversations {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d answers delivered of %d", delivered, conversations)
					}
					time.Sleep(10 * time.Millisecond) // polls the store and the fake Slack; orders nothing
				}
				wall := time.Since(start)
				cancel()
				delivering.Wait()
				srv.Close()
				var runs int
				var lags []time.Duration
				for i := range conversations {
					id := fmt.Sprintf("sl:C2147483705:1700000000.%06d", i)
					var final time.Time
					for ev, err := range g.Store.Events(channeltest.Ctx(), id, 0) {
						if err != nil {
							b.Fatal(err)
						}
						switch ev.Type {
						case session.TypeRunStarted:
							runs++
						case session.TypeFinal:
							final = ev.Time
						}
					}
					mu.Lock()
					at, ok := got[fmt.Sprintf("1700000000.%06d", i)]
					mu.Unlock()
					if ok && !final.IsZero() {
						lags = append(lags, at.Sub(final))
					}
				}
				b.ReportMetric(float64(runs), "turns")
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(float64(len(lags)), "delivered")
				quantiles(b, lags)
			}
		})
	}
}
