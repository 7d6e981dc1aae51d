package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// inbox is a subscription's deliveries, one message at a time.
type inbox chan session.Relayed

func subscribe(t *testing.T, st *postgres.Store) (inbox, func()) {
	t.Helper()
	in := make(inbox, 4096)
	stop, err := st.Subscribe(t.Context(), func(msgs []session.Relayed) {
		for _, m := range msgs {
			select {
			case in <- m:
			default:
				t.Error("the test's inbox is full")
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return in, stop
}

// next returns the next message, or fails the test once ctx ends.
func (in inbox) next(t *testing.T) session.Relayed {
	t.Helper()
	select {
	case m := <-in:
		return m
	case <-t.Context().Done():
		t.Fatal("no message came")
		return session.Relayed{}
	}
}

func token(tenant, id string, after int64, text string) session.Relayed {
	return session.Relayed{Kind: session.RelayLive, Tenant: tenant, SessionID: id, After: after, Event: &session.Event{
		V: session.SchemaVersion, SessionID: id, RunID: "r1", Turn: 1, Type: session.TypeToken,
		Time: time.Now().UTC().Truncate(time.Microsecond), Agent: "assistant", Data: &session.Token{Text: text},
	}}
}

// perSession returns the messages of each session, and the notices, in
// their order: the order the relay keeps.
func perSession(msgs []session.Relayed) map[string][]session.Relayed {
	out := make(map[string][]session.Relayed)
	for _, m := range msgs {
		k := fmt.Sprint(m.Kind, "/", m.Tenant, "/", m.SessionID)
		out[k] = append(out[k], m)
	}
	return out
}

func publish(t *testing.T, st *postgres.Store, msgs ...session.Relayed) {
	t.Helper()
	if err := st.Publish(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
}

// Two stores (two processes) on one schema: what one publishes reaches
// the other's subscribers in order, never its own, and a subscriber
// hears first that it listens.
func TestRelayAcrossStores(t *testing.T) {
	a, dsn := open(t)
	b, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.RelayChannel() != b.RelayChannel() || !strings.HasPrefix(a.RelayChannel(), "agentrt_relay.t_") {
		t.Errorf("channels %q and %q", a.RelayChannel(), b.RelayChannel())
	}
	inA, _ := subscribe(t, a)
	inB, _ := subscribe(t, b)
	for _, in := range []inbox{inA, inB} {
		if m := in.next(t); m.Kind != session.RelayListening {
			t.Fatalf("first delivery %+v, want listening", m)
		}
	}
	// A person watching the channel sees payloads under NOTIFY's limit.
	raw, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(context.Background())
	if _, err := raw.Exec(t.Context(), `LISTEN `+pgx.Identifier{a.RelayChannel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	var sent []session.Relayed
	for i := range 1000 {
		tenant := []string{"acme", "beta"}[i%2]
		sent = append(sent, token(tenant, "s1", int64(i/100), fmt.Sprint("tok", i)))
	}
	sent = append(sent, session.Relayed{Kind: session.RelayWatching, Tenant: "acme", SessionID: "s2"}, session.Relayed{Kind: session.RelayHello})
	publish(t, a, sent...)
	var got []session.Relayed
	for range sent {
		got = append(got, inB.next(t))
	}
	if diff := cmp.Diff(perSession(sent), perSession(got)); diff != "" {
		t.Errorf("b got (-a sent +b got):\n%s", diff)
	}
	notifies := 0
	for total := 0; total < len(sent); notifies++ {
		n, err := raw.WaitForNotification(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Payload) >= 8000 {
			t.Errorf("a payload of %d bytes", len(n.Payload))
		}
		total += strings.Count(n.Payload, `{"p":`) + strings.Count(n.Payload, `"w":1`) + strings.Count(n.Payload, `"h":1`)
	}
	// 1,000 tokens of two sessions, alternating, grouped by session:
	// some 35 bytes a token.
	if notifies > 5 {
		t.Errorf("%d NOTIFYs for 1,000 tokens", notifies)
	}
	t.Logf("1,000 tokens in %d NOTIFYs, one round trip", notifies)

	// b's message reaches a; a heard nothing of its own before it.
	publish(t, b, token("acme", "s1", 9, "from b"))
	if m := inA.next(t); m.Event == nil || m.Event.Data.(*session.Token).Text != "from b" {
		t.Errorf("a got %+v first, want b's token", m)
	}
}

// The relay stays within a schema: two installations in one database
// do not hear each other.
func TestRelayChannelPerSchema(t *testing.T) {
	a, _ := open(t)
	other, _ := open(t)
	b, err := postgres.Open(t.Context(), mustDSN(t, other))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.RelayChannel() == other.RelayChannel() {
		t.Fatalf("two schemas share channel %q", a.RelayChannel())
	}
	in, _ := subscribe(t, other)
	if m := in.next(t); m.Kind != session.RelayListening {
		t.Fatalf("first delivery %+v", m)
	}
	publish(t, a, token("default", "s1", 1, "other schema"))
	// Then one on other's schema, from b: had a's come, it would be
	// first (notifications come in the order of their commits).
	publish(t, b, token("default", "s1", 1, "same schema"))
	if m := in.next(t); m.Event.Data.(*session.Token).Text != "same schema" {
		t.Errorf("got %+v", m.Event.Data)
	}
}

func mustDSN(t *testing.T, st *postgres.Store) string {
	t.Helper()
	// The schema is in the channel's name: agentrt_relay.SCHEMA.
	schema := strings.TrimPrefix(st.RelayChannel(), "agentrt_relay.")
	base := pgtest.DSN(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// Once stop returns, a subscription gets nothing more; the others go on.
func TestRelayStop(t *testing.T) {
	a, dsn := open(t)
	b, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first, stop := subscribe(t, b)
	second, _ := subscribe(t, b)
	first.next(t)  // listening
	second.next(t) // listening
	publish(t, a, token("default", "s1", 1, "both"))
	first.next(t)
	second.next(t)
	stop()
	stop() // idempotent
	publish(t, a, token("default", "s1", 1, "second only"))
	if m := second.next(t); m.Event.Data.(*session.Token).Text != "second only" {
		t.Fatalf("second got %+v", m.Event.Data)
	}
	// Delivered to both in one go had first still been subscribed.
	select {
	case m := <-first:
		t.Errorf("a stopped subscription got %+v", m)
	default:
	}
}

// A listening connection that breaks loses what was published meanwhile:
// the subscribers hear that they listen again.
func TestRelayListensAgain(t *testing.T) {
	a, dsn := open(t) // polls every 50 ms: reconnects soon
	b, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	in, _ := subscribe(t, a)
	in.next(t) // listening
	raw, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(context.Background())
	var killed int
	if err := raw.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = $1`, `LISTEN `+pgx.Identifier{a.RelayChannel()}.Sanitize()).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listening connections, want a's", killed)
	}
	if m := in.next(t); m.Kind != session.RelayListening {
		t.Fatalf("after the break: %+v, want listening", m)
	}
	publish(t, b, token("default", "s1", 1, "heard again"))
	if m := in.next(t); m.Event == nil || m.Event.Data.(*session.Token).Text != "heard again" {
		t.Errorf("got %+v", m)
	}
}

// Bad input: a nil deliver, a kind that is not published.
func TestRelayRefuses(t *testing.T) {
	a, _ := open(t)
	if _, err := a.Subscribe(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "nil deliver") {
		t.Errorf("Subscribe(nil): %v", err)
	}
	err := a.Publish(t.Context(), []session.Relayed{{Kind: session.RelayListening}, token("default", "s1", 1, "ok")})
	if err == nil || !strings.Contains(err.Error(), "message 0: kind 3 cannot be published") {
		t.Errorf("Publish(listening): %v", err)
	}
}

// Sync returns once what was published before it has been delivered;
// at once on a store that does not listen yet.
func TestRelaySync(t *testing.T) {
	a, dsn := open(t)
	b, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Sync(t.Context()); err != nil {
		t.Fatalf("Sync before listening: %v", err)
	}
	in, _ := subscribe(t, b)
	in.next(t) // listening
	for i := range 20 {
		publish(t, a, token("default", "s1", int64(i), fmt.Sprint("token ", i)))
		if err := b.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-in:
			if m.After != int64(i) {
				t.Fatalf("got %+v, want token %d", m, i)
			}
		default:
			t.Fatalf("Sync returned before token %d, published before it, was delivered", i)
		}
	}
	// Sync calls together share barriers, and all return.
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := b.Sync(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
