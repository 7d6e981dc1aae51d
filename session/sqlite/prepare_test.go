package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// reprepared lists the statements of db's connections that SQLite has
// compiled again since they were prepared (SQLITE_STMTSTATUS_REPREPARE),
// with the count: a statement whose plan depends on a bound value (a
// LIMIT ?, a parameter compared with a partial index's constant) is
// recompiled at every run, which costs more than running it.
func reprepared(t *testing.T, db *sql.DB) map[string]int32 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int32{}
	// Every connection of the pool, held at once so that each is a
	// different one.
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range db.Stats().OpenConnections {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		err = c.Raw(func(dc any) error {
			v := reflect.ValueOf(dc.(driver.Conn)).Elem()
			handle := uintptr(v.FieldByName("db").Uint())
			tls := (*libc.TLS)(unsafe.Pointer(v.FieldByName("tls").Pointer()))
			for p := lib.Xsqlite3_next_stmt(tls, handle, 0); p != 0; p = lib.Xsqlite3_next_stmt(tls, handle, p) {
				if n := lib.Xsqlite3_stmt_status(tls, p, lib.SQLITE_STMTSTATUS_REPREPARE, 0); n > 0 {
					out[libc.GoString(lib.Xsqlite3_sql(tls, p))] += n
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestStatementsAreNotCompiledAgain runs the store's hot paths — a turn's
// commits, its lease, the inbox, reads of the log and of the session,
// listings — several times, and finds no statement that SQLite compiled
// again (parsing a query costs more than running it: a LIMIT ? made every
// read of the inbox and of the log a new parse).
func TestStatementsAreNotCompiledAgain(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 3 {
		id := fmt.Sprintf("s%d", i)
		got, l, _, err := st.CreateOrAcquire(ctx, &session.Session{ID: id, Agent: "a", Status: session.StatusIdle, CreatedAt: time.Now()}, "owner", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		seq := got.LastSeq
		for range 3 {
			ev := &session.Event{V: session.SchemaVersion, Seq: seq + 1, SessionID: id, Turn: 1, Type: session.TypeModelFinished, Time: time.Now(),
				Data: &session.ModelFinished{Model: "m", Content: "hi", Usage: model.Usage{InputTokens: 1}}}
			if err := st.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: seq, Events: []*session.Event{ev}, Status: session.StatusRunning, Turn: 1, Time: time.Now(), Fence: l.Token}); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		if l, err = st.Renew(ctx, l, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: seq, Status: session.StatusIdle, Turn: 1, Time: time.Now(), Fence: l.Token, Release: true}); err != nil {
			t.Fatal(err)
		}
		for _, err := range st.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.GetSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		in := &session.InboxInput{ID: fmt.Sprintf("in%d", i), Source: "src", SessionID: id, Parts: []session.InputPart{{Type: "text", Text: "hi"}}}
		if _, _, err := st.SubmitWithin(ctx, in, session.Bounds{Pending: 100, Bytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		if err := st.Refuse(ctx, []string{fmt.Sprintf("none%d", i)}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pending(ctx, "src", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pending(ctx, "src", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Inputs(ctx, "src", 0, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.PendingSources(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.PendingOf(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ListSessions(ctx, session.ListOptions{Limit: 10 + i}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ListSessions(ctx, session.ListOptions{Status: session.StatusIdle}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ExpiredLeases(ctx, nil, 10+i); err != nil {
			t.Fatal(err)
		}
		if _, err := st.LeasedTo(ctx, "owner", nil, 10+i); err != nil {
			t.Fatal(err)
		}
		if _, err := st.PendingRequests(ctx, session.RequestListOptions{Limit: 10 + i}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ExpiredRequests(ctx, time.Now(), nil, 10+i); err != nil {
			t.Fatal(err)
		}
	}
	for name, db := range map[string]*sql.DB{"writer": st.w, "readers": st.r} {
		for q, n := range reprepared(t, db) {
			t.Errorf("%s: compiled %d times again: %s", name, n, q)
		}
	}
}
