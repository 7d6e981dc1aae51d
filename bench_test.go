package agentrt_test

import (
	"context"

	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
)

// The benchmark turn: 4 model calls and 3 tool calls, as the issue states:
// the model calls "add" three times, one call per reply, then answers.

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

func add(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }

func benchScript() *scripted.Model {
	call := func(a, b int) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("add", fmt.Sprintf(`{"a":%d,"b":%d}`, a, b))}}
	}
	return scripted.New("bench", call(1, 2), call(3, 4), call(5, 6), scripted.Reply{Text: "The sums are 3, 7 and 11."})
}

func benchAgent(b *testing.B) (*agentrt.Agent, *scripted.Model) {
	m := benchScript()
	reg, err := tool.NewRegistry(tool.Must(tool.New("add", "adds two numbers", add)))
	if err != nil {
		b.Fatal(err)
	}
	return &agentrt.Agent{Name: "bench", SystemPrompt: "You add numbers.", Model: m, Tools: reg}, m
}

// plainTurn is the floor: a hand-written loop doing the same work with no
// runtime: build the request, stream and assemble each reply, decode the
// arguments, call the function, encode the result, append the messages.
func plainTurn(ctx context.Context, m model.Model, specs []model.ToolSpec, sys model.Message, input string) (string, error) {
	msgs := []model.Message{sys, model.TextMessage(model.RoleUser, input)}
	var asm model.Assembler
	for range 10 {
		asm.Reset()
		req := model.Request{Messages: msgs, Tools: specs}
		for c, err := range m.Stream(ctx, &req) {
			if err != nil {
				return "", err
			}
			asm.Add(c)
		}
		resp, err := asm.Response()
		if err != nil {
			return "", err
		}
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			return resp.Message.Text(), nil
		}
		for _, c := range resp.Message.ToolCalls {
			var in addIn
			if err := json.Unmarshal(c.Arguments, &in); err != nil {
				return "", err
			}
			out, err := add(ctx, in)
			if err != nil {
				return "", err
			}
			b, err := json.Marshal(out)
			if err != nil {
				return "", err
			}
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name,
				Parts: []model.Part{{Type: model.PartText, Text: string(b)}}})
		}
	}
	return "", fmt.Errorf("no answer")
}

func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	plain := func(b *testing.B) {
		a, m := benchAgent(b)
		specs := []model.ToolSpec{}
		for _, d := range a.Tools.Definitions() {
			specs = append(specs, model.ToolSpec{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
		}
		sys := model.TextMessage(model.RoleSystem, a.SystemPrompt)
		b.ReportAllocs()
		for b.Loop() {
			m.Reset()
			text, err := plainTurn(ctx, m, specs, sys, "add 1+2, 3+4 and 5+6")
			if err != nil || text == "" {
				b.Fatal(text, err)
			}
		}
	}
	b.Run("plain-loop", plain)
	// runTurns runs one turn per iteration, each in a new session. With
	// forget, each session is deleted (timed) as soon as its turn is over.
	runTurns := func(b *testing.B, store session.Store, forget bool, configure ...func(*agentrt.Agent)) {
		a, m := benchAgent(b)
		for _, c := range configure {
			c(a)
		}
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, 0, 1024)
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			// Sessions are made 1024 at a time with the timer stopped; not
			// every turn, because StartTimer reads the memory statistics,
			// which stops the world and empties every P's allocation
			// cache: each timed turn would begin by refilling a cache for
			// every size class it allocates, a cost of the harness that
			// the plain loop does not pay (a third of a turn in memory).
			if len(ids) == 0 {
				b.StopTimer()
				for range cap(ids) {
					n++
					s, err := r.CreateSession(ctx, "bench", "s"+strconv.Itoa(n), nil)
					if err != nil {
						b.Fatal(err)
					}
					ids = append(ids, s.ID)
				}
				b.StartTimer()
			}
			id := ids[len(ids)-1]
			ids = ids[:len(ids)-1]
			m.Reset()
			for e, err := range r.Run(ctx, id, agentrt.Input{Text: "add 1+2, 3+4 and 5+6"}) {
				if err != nil {
					b.Fatal(err)
				}
				if d, ok := e.Data.(*session.RunFinished); ok && d.Status != "done" {
					b.Fatalf("status %s", d.Status)
				}
			}
			if forget {
				// In memory, the finished session is deleted at once (and
				// the deletion timed): otherwise the heap grows by every
				// turn's events and the figure measures the garbage
				// collector marking an ever larger store, which the plain
				// loop, keeping nothing, does not pay.
				if err := r.DeleteSession(ctx, id, true); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// memstore keeps every event of every session on the heap. Kept for
	// the whole benchmark, they grow it by some 6 KB a turn, and the time
	// per turn grew with -benchtime (page faults on fresh memory); with
	// the sessions forgotten a batch at a time, the store stays at about a
	// thousand sessions and the measure is steady.
	b.Run("runtime-memory", func(b *testing.B) { runTurns(b, memstore.New(), true) })
	// Issue 10's guards: every budget set (none reached) and the loop
	// detectors on (as they are by default), against none of them.
	b.Run("runtime-memory-guards", func(b *testing.B) {
		runTurns(b, memstore.New(), true, func(a *agentrt.Agent) {
			a.Limits = agentrt.Limits{MaxSteps: 1000, MaxTokens: 1 << 40, MaxCostUSD: 1e6, SessionMaxTokens: 1 << 50,
				SessionMaxCostUSD: 1e9, MaxTurnDuration: time.Hour}
		})
	})
	b.Run("runtime-memory-noguards", func(b *testing.B) {
		runTurns(b, memstore.New(), true, func(a *agentrt.Agent) { a.LoopDetection.Off = true })
	})
	b.Run("runtime-sqlite", func(b *testing.B) {
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		runTurns(b, st, false) // like the floor's, the database grows
	})
	// The same with synchronous=FULL (the store runs NORMAL): the WAL is
	// synced at every commit, so a power loss loses no committed step.
	b.Run("runtime-sqlite-full", func(b *testing.B) {
		st, err := sqlite.Open(ctx, "file:"+filepath.Join(b.TempDir(), "bench.db")+"?_synchronous=FULL")
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		runTurns(b, st, false)
	})
	b.Run("runtime-postgres", func(b *testing.B) {
		dsn, _ := pgtest.Schema(b)
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		runTurns(b, st, false)
	})
	b.Run("postgres-floor", func(b *testing.B) {
		commits := recordTurnCommits(b)
		dsn, _ := pgtest.Schema(b)
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		for _, q := range []string{
			`CREATE TABLE events (session_id text, seq bigint, json text, PRIMARY KEY (session_id, seq))`,
			`CREATE TABLE sessions (id text PRIMARY KEY, last_seq bigint)`,
			`CREATE TABLE snapshots (session_id text PRIMARY KEY, data bytea)`,
		} {
			if _, err := pool.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		n, made := 0, 0
		b.ReportAllocs()
		for b.Loop() {
			if n == made {
				b.StopTimer()
				for range 1024 {
					made++
					if _, err := pool.Exec(ctx, `INSERT INTO sessions (id, last_seq) VALUES ($1, 0)`, "s"+strconv.Itoa(made)); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			n++
			id := "s" + strconv.Itoa(n)
			seq := int64(0)
			for _, c := range commits {
				// One transaction per commit, its statements pipelined.
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					batch := &pgx.Batch{}
					for _, ev := range c.events {
						seq++
						batch.Queue(`INSERT INTO events (session_id, seq, json) VALUES ($1, $2, $3)`, id, seq, string(ev))
					}
					batch.Queue(`UPDATE sessions SET last_seq = $1 WHERE id = $2`, seq, id)
					if c.snapshot != nil {
						batch.Queue(`INSERT INTO snapshots (session_id, data) VALUES ($1, $2)
							ON CONFLICT (session_id) DO UPDATE SET data = excluded.data`, id, c.snapshot)
					}
					return tx.SendBatch(ctx, batch).Close()
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("sqlite-floor", func(b *testing.B) {
		commits := recordTurnCommits(b)
		db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "floor.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		for _, q := range []string{
			`CREATE TABLE events(session_id TEXT, seq INTEGER, json BLOB, PRIMARY KEY(session_id, seq)) WITHOUT ROWID`,
			`CREATE TABLE sessions(id TEXT PRIMARY KEY, last_seq INTEGER)`,
			`CREATE TABLE snapshots(session_id TEXT PRIMARY KEY, data BLOB)`,
		} {
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		ins, _ := db.Prepare(`INSERT INTO events(session_id, seq, json) VALUES(?,?,?)`)
		upd, _ := db.Prepare(`UPDATE sessions SET last_seq=? WHERE id=?`)
		snap, _ := db.Prepare(`INSERT INTO snapshots(session_id, data) VALUES(?,?) ON CONFLICT(session_id) DO UPDATE SET data=excluded.data`)
		n, made := 0, 0
		b.ReportAllocs()
		for b.Loop() {
			// Sessions are made as runTurns makes them, 1024 at a time with
			// the timer stopped, so that the floor times the turn's
			// transactions alone, as runtime-sqlite does.
			if n == made {
				b.StopTimer()
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				for range 1024 {
					made++
					if _, err := tx.Exec(`INSERT INTO sessions(id, last_seq) VALUES(?, 0)`, "s"+strconv.Itoa(made)); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n++
			id := "s" + strconv.Itoa(n)
			seq := int64(0)
			for _, c := range commits {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				for _, ev := range c.events {
					seq++
					if _, err := tx.Stmt(ins).Exec(id, seq, ev); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := tx.Stmt(upd).Exec(seq, id); err != nil {
					b.Fatal(err)
				}
				if c.snapshot != nil {
					if _, err := tx.Stmt(snap).Exec(id, c.snapshot); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

type recordedCommit struct {
	events   [][]byte
	snapshot []byte
}

// recordingStore captures the bytes each commit writes, for the floor.
type recordingStore struct {
	session.Store
	commits []recordedCommit
}

func (s *recordingStore) Commit(ctx context.Context, c *session.Commit) error {
	var rc recordedCommit
	for _, e := range c.Events {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		rc.events = append(rc.events, b)
	}
	if c.Snapshot != nil {
		rc.snapshot = append([]byte(nil), c.Snapshot.Data...)
	}
	s.commits = append(s.commits, rc)
	return s.Store.Commit(ctx, c)
}

func recordTurnCommits(b *testing.B) []recordedCommit {
	a, _ := benchAgent(b)
	rs := &recordingStore{Store: memstore.New()}
	r, err := agentrt.NewRunner(agentrt.Config{Store: rs, Agents: []*agentrt.Agent{a}})
	if err != nil {
		b.Fatal(err)
	}
	s, err := r.CreateSession(context.Background(), "bench", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	res, err := agentrt.Collect(r.Run(context.Background(), s.ID, agentrt.Input{Text: "add 1+2, 3+4 and 5+6"}))
	if err != nil || res.Status != session.StatusDone {
		b.Fatal(res, err)
	}
	return rs.commits
}

// BenchmarkLongSession compares a turn late in a long conversation with
// the first turn of a new session (the same work per turn): turn-1 runs
// each turn in a new session; turn-500 runs 500 turns untimed in one
// session, then times the next ones in it.
func BenchmarkLongSession(b *testing.B) {
	ctx := context.Background()
	stores := map[string]func(b *testing.B) session.Store{
		"sqlite": func(b *testing.B) session.Store {
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "long.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(b *testing.B) session.Store {
			dsn, _ := pgtest.Schema(b)
			st, err := postgres.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		turn := func(b *testing.B, r *agentrt.Runner, m *scripted.Model, id string) {
			m.Reset()
			res, err := agentrt.Collect(r.Run(ctx, id, agentrt.Input{Text: "add 1+2, 3+4 and 5+6"}))
			if err != nil || res.Status != session.StatusDone {
				b.Fatal(res, err)
			}
		}
		// Compaction off in both: the point is a turn over the whole
		// long history, and the script has no summary to give.
		b.Run(name+"/turn-1", func(b *testing.B) {
			a, m := benchAgent(b)
			a.Compaction.Off = true
			r, err := agentrt.NewRunner(agentrt.Config{Store: stores[name](b), Agents: []*agentrt.Agent{a}})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				n++
				b.StopTimer()
				s, err := r.CreateSession(ctx, "bench", "s"+strconv.Itoa(n), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				turn(b, r, m, s.ID)
			}
		})
		b.Run(name+"/turn-500", func(b *testing.B) {
			a, m := benchAgent(b)
			a.Compaction.Off = true
			r, err := agentrt.NewRunner(agentrt.Config{Store: stores[name](b), Agents: []*agentrt.Agent{a}})
			if err != nil {
				b.Fatal(err)
			}
			s, err := r.CreateSession(ctx, "bench", "long", nil)
			if err != nil {
				b.Fatal(err)
			}
			for range 500 {
				turn(b, r, m, s.ID)
			}
			b.ResetTimer()
			for b.Loop() {
				turn(b, r, m, s.ID)
			}
		})
	}
}

// BenchmarkPlanExecute runs a plan of 3 tool steps and a summary (the
// model writes the plan, then the summary: 2 model calls, 3 tool calls)
// beside the think-act turn making the same 3 calls (4 model calls), both
// over memstore, in the same run. One op is one turn.
func BenchmarkPlanExecute(b *testing.B) {
	ctx := context.Background()
	plan := `{"steps":[{"kind":"tool","tool":"add","arguments":{"a":1,"b":2}},` +
		`{"kind":"tool","tool":"add","arguments":{"a":3,"b":4}},{"kind":"tool","tool":"add","arguments":{"a":5,"b":6}}]}`
	for _, name := range []string{"react", "plan"} {
		b.Run(name, func(b *testing.B) {
			a, m := benchAgent(b)
			if name == "plan" {
				m = scripted.New("bench", scripted.Reply{Text: plan}, scripted.Reply{Text: "The sums are 3, 7 and 11."})
				a.Model, a.Policy = m, agentrt.PlanExecute{}
			}
			store := memstore.New()
			r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				id := "p" + strconv.Itoa(n)
				m.Reset()
				res, err := r.Send(ctx, id, agentrt.Input{Text: "add 1+2, 3+4 and 5+6", Agent: "bench"})
				if err != nil || res.Text != "The sums are 3, 7 and 11." {
					b.Fatal(res, err)
				}
				if err := r.DeleteSession(ctx, id, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
