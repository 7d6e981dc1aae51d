package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

// turnEvents returns the 3 events of a typical think-act round, numbered
// from+1..from+3, at realistic sizes as JSON: a model reply with a tool
// call (1.0 KB), the tool call (0.4 KB) and its result (1.6 KB).
func turnEvents(from int64) []*session.Event {
	args := json.RawMessage(`{"query":"` + strings.Repeat("golang iterators ", 8) + `","limit":10,"lang":"en"}`)
	result := json.RawMessage(`{"hits":[` + strings.Repeat(`{"title":"Range over function types","url":"https://go.dev/blog/range-functions","score":0.93},`, 14) + `{"title":"last"}]}`)
	usage := model.Usage{InputTokens: 1843, OutputTokens: 212, CachedTokens: 1024, CostUSD: 0.004321}
	now := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	data := []session.Data{
		&session.ModelFinished{Model: "gpt-test", Content: strings.Repeat("Let me search for that. ", 20),
			ToolCalls: []model.ToolCall{{ID: "call_1", Name: "search", Arguments: args}}, Usage: usage, FinishReason: model.FinishToolCalls, LatencyMS: 1234},
		&session.ToolCall{CallID: "call_1", Name: "search", Arguments: args},
		&session.ToolResult{CallID: "call_1", Name: "search", OK: true, Result: result, LatencyMS: 87},
	}
	evs := make([]*session.Event, len(data))
	for i, d := range data {
		evs[i] = &session.Event{V: session.SchemaVersion, Seq: from + int64(i) + 1, SessionID: "bench-session-0001", RunID: "run-0001",
			Turn: 1, Type: d.EventType(), Time: now, Agent: "assistant", Data: d}
	}
	return evs
}

// BenchmarkCommit is one durable round: 3 events in one Commit.
func BenchmarkCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		ctx  func(b *testing.B) context.Context
		snap bool
	}{
		{"ctx=background", func(*testing.B) context.Context { return context.Background() }, false},
		{"ctx=cancelable", func(b *testing.B) context.Context { return b.Context() }, false},
		{"ctx=background/snapshot", func(*testing.B) context.Context { return context.Background() }, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := bc.ctx(b)
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentrt.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			if err := st.CreateSession(ctx, &session.Session{ID: "bench-session-0001", Agent: "assistant", Status: session.StatusRunning, CreatedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			// Events are made up front: a store may keep them, so they are
			// not reused across commits. Only the commit is timed.
			const batch = 4096
			var (
				evs  [][]*session.Event
				next int64
			)
			snap := &session.Snapshot{Data: json.RawMessage(`{"messages":` + strings.Repeat(`"a message of the conversation so far",`, 40) + `""]}`)}
			b.ReportAllocs()
			for b.Loop() {
				if len(evs) == 0 {
					b.StopTimer()
					for range batch {
						evs = append(evs, turnEvents(next+int64(len(evs))*3))
					}
					b.StartTimer()
				}
				c := &session.Commit{SessionID: "bench-session-0001", ExpectSeq: next, Events: evs[0], Status: session.StatusRunning, Turn: 1,
					Usage: model.Usage{InputTokens: 1843, OutputTokens: 212}, Time: time.Now()}
				if bc.snap {
					snap.Seq = next + 3
					c.Snapshot = snap
				}
				if err := st.Commit(ctx, c); err != nil {
					b.Fatal(err)
				}
				evs = evs[1:]
				next += 3
			}
		})
	}
}

// BenchmarkFloor is the floor BenchmarkCommit is measured against: a bare
// SQLite transaction, with the store's pragmas, inserting the same event
// bytes (already encoded) with a prepared statement into a table with no
// index. What a Commit adds is encoding the events, the type and time
// columns, and the update of the session row (one more page per commit).
// The runtime's BenchmarkTurn compares whole turns against a floor of its
// own.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file://"+filepath.ToSlash(filepath.Join(b.TempDir(), "floor.db"))+
		"?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, json TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	insert, err := db.PrepareContext(ctx, `INSERT INTO events (session_id, seq, json) VALUES (?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()
	var encoded [][]byte
	for _, ev := range turnEvents(0) {
		bs, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		encoded = append(encoded, bs)
	}
	var seq int64
	b.ReportAllocs()
	for b.Loop() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		ins := tx.StmtContext(ctx, insert)
		for _, bs := range encoded {
			seq++
			if _, err := ins.ExecContext(ctx, "bench-session-0001", seq, bs); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
