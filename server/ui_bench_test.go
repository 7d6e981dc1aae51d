package server_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

var uiSessions = flag.Int("ui.sessions", 100_000, "BenchmarkUIPages: the sessions the sessions page lists from")

// BenchmarkUIPages: the server's time and bytes for the inspector's two
// heaviest pages, on the default store (SQLite): a session of 10,000
// events (the newest 500 rendered, the rest a link away), and the first
// page of the sessions list among -ui.sessions sessions (paged by the
// store). Client and server in one process; ns/op is a page's request to
// its last byte. docs/benchmarks.md has the figures.
func BenchmarkUIPages(b *testing.B) {
	ctx := session.WithTenant(context.Background(), session.DefaultTenant)
	store := stores[0].open(b)
	ls := newLoadServer(b, loadOptions{store: store})
	// A session of 10,000 events: 2,500 rounds of a model reply with a
	// tool call, the call, its result and the next round, 100 a commit.
	if _, err := ls.r.CreateSession(ctx, "assistant", "big", nil); err != nil {
		b.Fatal(err)
	}
	var seq int64
	now := time.Now()
	for seq < 10_000 {
		var evs []*session.Event
		for range 25 {
			for _, d := range []session.Data{
				&session.ModelFinished{Model: "m", Content: "Let me add these numbers for you, one at a time.",
					ToolCalls: []model.ToolCall{{ID: fmt.Sprint("c", seq), Name: "add", Arguments: []byte(`{"a":1,"b":2}`)}},
					Usage:     model.Usage{InputTokens: 900, OutputTokens: 40}, FinishReason: model.FinishToolCalls, LatencyMS: 800},
				&session.ToolCall{CallID: fmt.Sprint("c", seq), Name: "add", Arguments: []byte(`{"a":1,"b":2}`)},
				&session.ToolResult{CallID: fmt.Sprint("c", seq), Name: "add", OK: true, Result: []byte(`3`), LatencyMS: 1},
				&session.RoundStarted{Round: int(seq/4) + 2},
			} {
				seq++
				evs = append(evs, &session.Event{V: session.SchemaVersion, Seq: seq, SessionID: "big", RunID: "r", Turn: 1,
					Type: d.EventType(), Time: now, Agent: "assistant", Data: d})
			}
		}
		if err := store.Commit(ctx, &session.Commit{SessionID: "big", ExpectSeq: seq - int64(len(evs)), Events: evs,
			Status: session.StatusIdle, Turn: 1, Time: now}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range *uiSessions {
		if err := store.CreateSession(ctx, &session.Session{ID: fmt.Sprintf("s%07d", i), Agent: "assistant",
			Status: session.StatusDone, CreatedAt: now.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, pg := range []struct{ name, path string }{
		{"page=session-10000-events", "/ui/sessions/big"},
		{"page=sessions", "/ui/"},
	} {
		b.Run(pg.name, func(b *testing.B) {
			var n int64
			for b.Loop() {
				resp, err := client.Get(ls.http.URL + pg.path)
				if err != nil {
					b.Fatal(err)
				}
				n, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("GET %s: %d %v", pg.path, resp.StatusCode, err)
				}
			}
			b.ReportMetric(float64(n)/1024, "page-KB")
		})
	}
}
