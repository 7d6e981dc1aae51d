package zzrt

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

func smallEvent(seq int64, id string) *session.Event {
	return &session.Event{V: 1, Seq: seq, SessionID: id, RunID: "r1", Turn: 1, Type: session.TypeToolCall, Time: time.Now(), Agent: "bench",
		Data: &session.ToolCall{CallID: "call_1", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}}
}

const perSession = 16

func BenchmarkSmallStore(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	n := 0
	var id string
	var seq int64
	var ids []string
	b.ReportAllocs()
	for b.Loop() {
		if seq == perSession {
			seq = 0
		}
		if seq == 0 {
			b.StopTimer()
			if len(ids) == 0 {
				for range 1024 {
					n++
					id := "s" + strconv.Itoa(n)
					st.CreateSession(ctx, &session.Session{ID: id, CreatedAt: time.Now()})
					ids = append(ids, id)
				}
			}
			id = ids[len(ids)-1]
			ids = ids[:len(ids)-1]
			b.StartTimer()
		}
		ev := smallEvent(seq+1, id)
		if err := st.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: seq, Events: []*session.Event{ev}, Status: session.StatusRunning, Turn: 1, Time: time.Now()}); err != nil {
			b.Fatal(err)
		}
		seq++
	}
}

func BenchmarkSmallFloor(b *testing.B) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "floor.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE events(session_id TEXT, seq INTEGER, json BLOB, PRIMARY KEY(session_id, seq)) WITHOUT ROWID`,
		`CREATE TABLE sessions(id TEXT PRIMARY KEY, last_seq INTEGER)`,
	} {
		db.Exec(q)
	}
	ins, _ := db.Prepare(`INSERT INTO events(session_id, seq, json) VALUES(?,?,?)`)
	upd, _ := db.Prepare(`UPDATE sessions SET last_seq=? WHERE id=?`)
	enc, _ := json.Marshal(smallEvent(1, "s1"))
	n := 0
	var id string
	var seq int64
	b.ReportAllocs()
	for b.Loop() {
		if seq == perSession {
			seq = 0
		}
		if seq == 0 {
			b.StopTimer()
			n++
			id = "s" + strconv.Itoa(n)
			db.Exec(`INSERT INTO sessions(id, last_seq) VALUES(?, 0)`, id)
			b.StartTimer()
		}
		seq++
		tx, _ := db.Begin()
		tx.Stmt(ins).Exec(id, seq, enc)
		tx.Stmt(upd).Exec(seq, id)
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
