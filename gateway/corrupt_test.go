package gateway_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
)

// An inbox row whose content cannot be decoded (damaged on disk, written
// by hand) is set aside — refused with the reason, reported — and the
// rest of the inbox goes on: the source's other inputs are answered in
// one turn, and another source is not affected. SQLite and Postgres.
func TestCorruptInboxRowSetAside(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var (
				store   session.Store
				corrupt func(id string)
			)
			switch kind {
			case "sqlite":
				path := filepath.Join(t.TempDir(), "a.db")
				st, err := sqlite.Open(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				store = st
				corrupt = func(id string) {
					db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if _, err := db.Exec(`UPDATE inbox SET parts = '[{"type":' WHERE id = ?`, id); err != nil {
						t.Fatal(err)
					}
				}
			case "postgres":
				dsn, _ := pgtest.Schema(t)
				st, err := postgres.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				store = st
				corrupt = func(id string) {
					pool, err := pgxpool.New(ctx, dsn)
					if err != nil {
						t.Fatal(err)
					}
					defer pool.Close()
					if _, err := pool.Exec(ctx, `UPDATE inbox SET parts = '[{"type":' WHERE id = $1`, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			a := &agentrt.Agent{Name: "assistant", Model: &bot{}}
			a.Compaction.Off = true
			r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close(ctx)
			var (
				mu       sync.Mutex
				reported []string
			)
			g, err := gateway.New(gateway.Config{Runner: r, Poll: 10 * time.Millisecond, OnError: func(source string, err error) {
				mu.Lock()
				reported = append(reported, source+": "+err.Error())
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			var subs []*gateway.Submitted
			for _, text := range []string{"one", "two", "three"} {
				sub, err := g.Submit(ctx, gateway.Input{Source: "chat", Text: text})
				if err != nil {
					t.Fatal(err)
				}
				ids, subs = append(ids, sub.ID), append(subs, sub)
			}
			other, err := g.Submit(ctx, gateway.Input{Source: "mail", Text: "hello"})
			if err != nil {
				t.Fatal(err)
			}
			corrupt(ids[1])

			// Answer serves chat now, as agentrt run does; then mail.
			if err := g.Answer(ctx, &gateway.Submitted{ID: ids[2], Source: "chat", Seq: 0}, nil); err != nil {
				t.Fatal(err)
			}
			if err := g.Answer(ctx, other, nil); err != nil {
				t.Fatal(err)
			}
			inbox := store.(session.Inbox)
			ins, err := inbox.Inputs(ctx, "chat", 0, 0)
			if err != nil {
				t.Fatalf("reading an inbox with a damaged row: %v", err)
			}
			states := map[string]session.InputState{}
			for _, in := range ins {
				states[in.ID] = in.State
				if in.ID == ids[1] && (in.Corrupt == "" || !strings.Contains(in.Reason, "could not be decoded")) {
					t.Errorf("the damaged input: %+v, want it marked corrupt and refused with the reason", in)
				}
			}
			if states[ids[0]] != session.InputAnswered || states[ids[1]] != session.InputRefused || states[ids[2]] != session.InputAnswered {
				t.Errorf("chat's inputs %v, want the damaged one refused, the others answered", states)
			}
			starts := events[session.RunStarted](t, store, "chat")
			if len(starts) != 1 || strings.Join(starts[0].Inputs, ",") != ids[0]+","+ids[2] {
				t.Errorf("chat's turns %+v, want one answering the two good inputs", starts)
			}
			if got, _ := inbox.Inputs(ctx, "mail", 0, 0); len(got) != 1 || got[0].State != session.InputAnswered {
				t.Errorf("mail's input %+v, want answered", got)
			}
			// Its follower hears why, with a code of its own: not
			// input_rejected, which says the source's policy refused it.
			fctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			f := g.Follow(subs[1], 0)
			var ferr error
			for _, err := range f.Events(fctx) {
				ferr = err
			}
			if o, _ := f.Outcome(); agentrt.AsError(ferr).ErrorCode() != agentrt.CodeStore || o.State != gateway.TurnRefused || o.Code != agentrt.CodeStore {
				t.Errorf("the damaged input's follower ended with %v, outcome %+v; want it refused, code store", ferr, o)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reported) != 1 || !strings.Contains(reported[0], "chat: input "+ids[1]+" set aside") {
				t.Errorf("reported %q, want the damaged input set aside", reported)
			}
		})
	}
}
