package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
)

// The relay (session.Relay) is LISTEN/NOTIFY on a channel of its own,
// listened to on the connection that listens for commits (see listen).
//
// A payload is one JSON object, at most maxPayload bytes:
//
//	{"v":1,"o":ORIGIN,"n":N,"m":[ITEM,...]}
//
// ORIGIN names the Store that sent it (a random id: a store skips its own
// payloads by their first bytes, without decoding them) and N counts its
// payloads (NOTIFY folds identical payloads sent in one transaction into
// one; no two of ours are identical). An ITEM is a group of live events
// of one run, sharing the envelope — {"t":TENANT,"s":SESSION,"r":RUN,
// "u":TURN,"a":AGENT,"b":UNIX_MICROS,"e":[EVENT,...]} — or a notice:
// {"t":TENANT,"s":SESSION,"w":1} (watching) or {"h":1} (hello). An EVENT
// is {"p":AFTER,"d":MICROS_AFTER_b,"x":TEXT} for a token ("z":1 for a
// pulse), or {"p":…,"d":…,"y":TYPE,"j":DATA} for any other live event.
// A token a few dozen bytes long costs some 30 bytes of envelope: a
// payload carries a couple of hundred of them. A barrier (Sync) is
// {"v":1,"o":ORIGIN,"n":N,"sync":1}: the store that sent it waits to
// hear it; the others skip it as they skip any payload they cannot use.

// relayChannelBase names the relay's channel; the schema's name follows
// it (see relayChannelFor).
const relayChannelBase = "agentrt_relay"

// maxPayload is the most bytes a payload may have: NOTIFY takes payloads
// shorter than 8000 bytes (in the server's encoding; agentrt's databases
// are UTF-8, as its JSON is).
const maxPayload = 7999

// relayVersion is the payload format's version; a payload of another
// version (a newer build's) is ignored.
const relayVersion = 1

var _ session.Relay = (*Store)(nil)

// relayHub is a Store's side of the relay: its channel and origin, and
// the subscribers its listening connection delivers to.
type relayHub struct {
	channel string       // set by Open
	prefix  string       // how this store's payloads begin
	sent    atomic.Int64 // payloads made: each is numbered

	mu        sync.Mutex
	subs      []*relaySub // guarded by mu
	listening bool        // guarded by mu: the listening connection LISTENs
	// Syncs: a barrier is a payload of this store's that its listening
	// connection waits to hear; the messages published before it have
	// been delivered then. next gathers the Sync calls for a barrier not
	// sent yet; barriers holds those sent and not yet heard, by payload
	// number. Guarded by mu.
	next     chan struct{}
	sending  bool
	barriers map[int64]chan struct{}
}

type relaySub struct{ deliver func([]session.Relayed) }

// relayChannelFor returns the relay's channel for the schema the store's
// tables are in: agentrt_relay.SCHEMA, or, for a schema name too long for
// a channel's 63 bytes, agentrt_relay.# and a digest of it. Processes
// relay to each other only within one database and one schema, as they
// share sessions.
func relayChannelFor(schema string) string {
	ch := relayChannelBase + "." + schema
	if len(ch) > 63 {
		sum := sha256.Sum256([]byte(schema))
		ch = relayChannelBase + ".#" + hex.EncodeToString(sum[:12])
	}
	return ch
}

// initRelay names the relay's channel after the schema the connections
// use (the first of their search_path that exists) and gives the store
// its origin.
func (st *Store) initRelay(ctx context.Context) error {
	var schema string
	if err := st.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("reading the current schema: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	st.relay.channel = relayChannelFor(schema)
	st.relay.prefix = `{"v":` + strconv.Itoa(relayVersion) + `,"o":"` + hex.EncodeToString(b[:]) + `"`
	return nil
}

// RelayChannel returns the channel the store's relay NOTIFYs on (see
// relayChannelFor), for a person or a tool that wants to watch it.
func (st *Store) RelayChannel() string { return st.relay.channel }

// Publish sends msgs to the other processes' subscribers: a NOTIFY per
// payload of up to 8000 bytes, all of them in one statement (one round
// trip, one transaction). See session.Relay.
func (st *Store) Publish(ctx context.Context, msgs []session.Relayed) error {
	payloads, dropped := st.relay.encode(msgs)
	if len(payloads) > 0 {
		_, err := st.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, st.relay.channel, payloads)
		if err != nil {
			return fmt.Errorf("postgres: relay: %w", err)
		}
	}
	if dropped != nil {
		return fmt.Errorf("postgres: relay: %w", dropped)
	}
	return nil
}

// Subscribe has deliver called with what other processes publish, from
// the goroutine that listens for commits. See session.Relay.
func (st *Store) Subscribe(ctx context.Context, deliver func([]session.Relayed)) (stop func(), err error) {
	if deliver == nil {
		return nil, errors.New("postgres: relay: Subscribe with a nil deliver")
	}
	select {
	case <-st.listen():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h := &st.relay
	s := &relaySub{deliver: deliver}
	h.mu.Lock()
	h.subs = append(h.subs, s)
	if h.listening {
		deliver([]session.Relayed{{Kind: session.RelayListening}})
	}
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			for i, x := range h.subs {
				if x == s {
					h.subs = append(h.subs[:i], h.subs[i+1:]...)
					break
				}
			}
		})
	}, nil
}

// Sync sends a barrier through the relay's channel and waits until the
// listening connection hears it: NOTIFY delivers in the order of the
// commits, so every message published before has been delivered then.
// The Sync calls that come while a barrier is being sent share the next.
// See session.Relay.
func (st *Store) Sync(ctx context.Context) error {
	h := &st.relay
	h.mu.Lock()
	if !h.listening {
		h.mu.Unlock()
		return nil
	}
	if h.next == nil {
		h.next = make(chan struct{})
	}
	heard := h.next
	send := !h.sending
	h.sending = true
	h.mu.Unlock()
	if send {
		st.sendBarriers()
	}
	select {
	case <-heard:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendBarriers sends a barrier for the Sync calls gathered, until none
// is waiting for one.
func (st *Store) sendBarriers() {
	h := &st.relay
	for {
		h.mu.Lock()
		heard := h.next
		h.next = nil
		if heard == nil {
			h.sending = false
			h.mu.Unlock()
			return
		}
		n := h.sent.Add(1)
		if h.barriers == nil {
			h.barriers = make(map[int64]chan struct{})
		}
		h.barriers[n] = heard
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
		payload := h.prefix + `,"n":` + strconv.FormatInt(n, 10) + `,"sync":1}`
		_, err := st.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, h.channel, payload)
		cancel()
		if err != nil {
			// Not sent: let the callers go on (best effort).
			h.mu.Lock()
			if c, ok := h.barriers[n]; ok {
				delete(h.barriers, n)
				close(c)
			}
			h.mu.Unlock()
		}
	}
}

// syncTimeout bounds the sending of a barrier.
const syncTimeout = 5 * time.Second

// setListening records whether the listening connection LISTENs; when it
// starts to, the subscribers learn that they may have missed messages.
// When it stops, the barriers not heard yet never will be: their Sync
// calls return.
func (h *relayHub) setListening(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listening = on
	if !on {
		for n, c := range h.barriers {
			delete(h.barriers, n)
			close(c)
		}
	}
	if on {
		msgs := []session.Relayed{{Kind: session.RelayListening}}
		for _, s := range h.subs {
			s.deliver(msgs)
		}
	}
}

// notified hands a payload from another process to the subscribers.
// Payloads of this store, of another format version, or that do not
// decode are skipped: the relay is best effort, and a sender that wrote
// a bad payload is not this process's to fail.
func (h *relayHub) notified(payload string) {
	if rest, ok := strings.CutPrefix(payload, h.prefix); ok {
		// Our own: skipped, but for a barrier, which says that all
		// before it was delivered.
		if num, ok := strings.CutSuffix(strings.TrimPrefix(rest, `,"n":`), `,"sync":1}`); ok {
			if n, err := strconv.ParseInt(num, 10, 64); err == nil {
				h.mu.Lock()
				if c, ok := h.barriers[n]; ok {
					delete(h.barriers, n)
					close(c)
				}
				h.mu.Unlock()
			}
		}
		return
	}
	h.mu.Lock()
	none := len(h.subs) == 0
	h.mu.Unlock()
	if none {
		return
	}
	msgs, err := decodeRelay(payload)
	if err != nil || len(msgs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		s.deliver(msgs)
	}
}

// errTooLarge is why a message was left out: it fits in no payload.
var errTooLarge = errors.New("a message too large for a NOTIFY payload was left out")

// encode makes the payloads that carry msgs: the notices first, then
// the live events of each run together, in the order they came (a
// watcher needs its session's in order, and the events of one run share
// an envelope: a token then costs some 30 bytes instead of a hundred). A
// token too large for one payload is cut in pieces at character
// boundaries (a watcher shows them one after the other, which reads the
// same); any other message too large is left out, and the error says so.
func (h *relayHub) encode(msgs []session.Relayed) (payloads []string, err error) {
	en := relayEncoder{hub: h}
	var order []groupKey
	runs := make(map[groupKey][]int)
	for i := range msgs {
		m := &msgs[i]
		switch m.Kind {
		case session.RelayLive:
			if m.Event == nil || m.Event.Data == nil {
				err = errors.Join(err, fmt.Errorf("message %d: a live message without an event", i))
				continue
			}
			k := keyOf(m)
			if _, ok := runs[k]; !ok {
				order = append(order, k)
			}
			runs[k] = append(runs[k], i)
		case session.RelayWatching:
			if !en.add(appendNotice(nil, m)) {
				err = errors.Join(err, fmt.Errorf("message %d (watching session %q): %w", i, m.SessionID, errTooLarge))
			}
		case session.RelayHello:
			en.add([]byte(`{"h":1}`))
		default:
			err = errors.Join(err, fmt.Errorf("message %d: kind %d cannot be published", i, m.Kind))
		}
	}
	for _, k := range order {
		for _, i := range runs[k] {
			m := &msgs[i]
			if e := en.live(m); e != nil {
				err = errors.Join(err, fmt.Errorf("message %d (%s of session %q): %w", i, m.Event.Type, m.SessionID, e))
			}
		}
	}
	en.finish()
	return en.out, err
}

func keyOf(m *session.Relayed) groupKey {
	return groupKey{tenant: m.Tenant, session: m.SessionID, run: m.Event.RunID, agent: m.Event.Agent, turn: m.Event.Turn}
}

// relayEncoder writes messages into payloads of at most maxPayload bytes.
type relayEncoder struct {
	hub *relayHub
	out []string
	buf []byte
	cur encState
}

// encState is where the encoder is in the payload being written.
type encState struct {
	n      int      // len(buf)
	items  int      // items in the payload
	group  groupKey // the open group's envelope, if inGroup
	base   int64    // its time, unix microseconds
	events int      // events in the open group
	open   bool     // a payload is started
	in     bool     // a group is open
}

type groupKey struct {
	tenant, session, run, agent string
	turn                        int
}

// closers is what a payload needs at most to end: "]}" for a group and
// "]}" for the payload.
const closers = 4

func (en *relayEncoder) start() {
	n := en.hub.sent.Add(1)
	en.buf = append(en.buf[:0], en.hub.prefix...)
	en.buf = append(en.buf, `,"n":`...)
	en.buf = strconv.AppendInt(en.buf, n, 10)
	en.buf = append(en.buf, `,"m":[`...)
	en.cur = encState{n: len(en.buf), open: true}
}

// finish ends the payload being written, if it holds anything.
func (en *relayEncoder) finish() {
	if en.cur.open && en.cur.items > 0 {
		if en.cur.in {
			en.buf = append(en.buf, "]}"...)
		}
		en.buf = append(en.buf, "]}"...)
		en.out = append(en.out, string(en.buf))
	}
	en.cur = encState{}
}

// add appends a notice, in a new payload if need be; false if it fits in
// none.
func (en *relayEncoder) add(item []byte) bool {
	for range 2 {
		if !en.cur.open {
			en.start()
		}
		mark := en.cur
		if en.cur.in {
			en.buf = append(en.buf, "]}"...)
			en.cur.in = false
		}
		if en.cur.items > 0 {
			en.buf = append(en.buf, ',')
		}
		en.buf = append(en.buf, item...)
		if len(en.buf)+closers <= maxPayload {
			en.cur.items++
			en.cur.n = len(en.buf)
			return true
		}
		en.buf, en.cur = en.buf[:mark.n], mark
		if en.cur.items == 0 {
			return false // alone it does not fit
		}
		en.finish()
	}
	return false
}

// live appends a live event, cutting a token too large for a payload.
func (en *relayEncoder) live(m *session.Relayed) error {
	if en.tryLive(m, nil) {
		return nil
	}
	en.finish()
	if en.tryLive(m, nil) {
		return nil
	}
	tok, ok := m.Event.Data.(*session.Token)
	if !ok || tok.Text == "" {
		return errTooLarge
	}
	rest := tok.Text
	for rest != "" {
		en.finish()
		en.start()
		cut := en.cutFitting(m, rest)
		if cut == 0 {
			return errTooLarge // the envelope alone is too large
		}
		piece := &session.Token{Text: rest[:cut], Pulse: tok.Pulse}
		if !en.tryLive(m, piece) {
			return errTooLarge // cutFitting said it fits alone
		}
		rest = rest[cut:]
	}
	return nil
}

// tryLive appends m's event (with tok in place of its token, if not nil)
// to the payload being written; false, having written nothing, if it
// does not fit.
func (en *relayEncoder) tryLive(m *session.Relayed, tok *session.Token) bool {
	if !en.cur.open {
		en.start()
	}
	mark := en.cur
	k := keyOf(m)
	at := m.Event.Time.UnixMicro()
	if !en.cur.in || en.cur.group != k {
		if en.cur.in {
			en.buf = append(en.buf, "]}"...)
		}
		if en.cur.items > 0 {
			en.buf = append(en.buf, ',')
		}
		en.buf = appendGroup(en.buf, k, at)
		en.cur.in, en.cur.group, en.cur.base, en.cur.events = true, k, at, 0
		en.cur.items++
	}
	if en.cur.events > 0 {
		en.buf = append(en.buf, ',')
	}
	var ok bool
	en.buf, ok = appendLive(en.buf, m, tok, at-en.cur.base)
	if !ok || len(en.buf)+closers > maxPayload {
		en.buf, en.cur = en.buf[:mark.n], mark
		return false
	}
	en.cur.events++
	en.cur.n = len(en.buf)
	return true
}

// cutFitting returns the length of the longest start of text (at a
// character boundary) that fits, as m's token, alone in the payload just
// started.
func (en *relayEncoder) cutFitting(m *session.Relayed, text string) int {
	k := keyOf(m)
	fixed := len(en.buf) + len(appendGroup(nil, k, m.Event.Time.UnixMicro())) + closers
	fits := func(n int) bool {
		b, ok := appendLive(nil, m, &session.Token{Text: text[:n], Pulse: m.Event.Data.(*session.Token).Pulse}, 0)
		return ok && fixed+len(b) <= maxPayload
	}
	if fits(len(text)) {
		return len(text)
	}
	// Binary search over the character boundaries: starts[lo] fits,
	// starts[hi] does not.
	starts := make([]int, 0, len(text))
	for i := range text {
		starts = append(starts, i)
	}
	starts = append(starts, len(text))
	lo, hi := 0, len(starts)-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(starts[mid]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return starts[lo]
}

func appendGroup(b []byte, k groupKey, base int64) []byte {
	b = append(b, `{"t":`...)
	b = appendString(b, k.tenant)
	b = append(b, `,"s":`...)
	b = appendString(b, k.session)
	if k.run != "" {
		b = append(b, `,"r":`...)
		b = appendString(b, k.run)
	}
	b = append(b, `,"u":`...)
	b = strconv.AppendInt(b, int64(k.turn), 10)
	if k.agent != "" {
		b = append(b, `,"a":`...)
		b = appendString(b, k.agent)
	}
	b = append(b, `,"b":`...)
	b = strconv.AppendInt(b, base, 10)
	return append(b, `,"e":[`...)
}

func appendNotice(b []byte, m *session.Relayed) []byte {
	b = append(b, `{"t":`...)
	b = appendString(b, m.Tenant)
	b = append(b, `,"s":`...)
	b = appendString(b, m.SessionID)
	return append(b, `,"w":1}`...)
}

// appendLive appends m's event; false if its data does not encode.
func appendLive(b []byte, m *session.Relayed, tok *session.Token, delta int64) ([]byte, bool) {
	b = append(b, `{"p":`...)
	b = strconv.AppendInt(b, m.After, 10)
	b = append(b, `,"d":`...)
	b = strconv.AppendInt(b, delta, 10)
	if tok == nil {
		tok, _ = m.Event.Data.(*session.Token)
	}
	if tok != nil {
		b = append(b, `,"x":`...)
		b = appendString(b, tok.Text)
		if tok.Pulse {
			b = append(b, `,"z":1`...)
		}
		return append(b, '}'), true
	}
	data, err := json.Marshal(m.Event.Data)
	if err != nil {
		return b, false
	}
	b = append(b, `,"y":`...)
	b = appendString(b, string(m.Event.Type))
	b = append(b, `,"j":`...)
	b = append(b, data...)
	return append(b, '}'), true
}

// appendString appends s as a JSON string (json.Marshal's escaping: any
// text, even invalid UTF-8 or a NUL, becomes a valid payload).
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

type relayPayload struct {
	V int         `json:"v"`
	M []relayItem `json:"m"`
}

type relayItem struct {
	T string       `json:"t"`
	S string       `json:"s"`
	R string       `json:"r"`
	U int          `json:"u"`
	A string       `json:"a"`
	B int64        `json:"b"`
	W int          `json:"w"`
	H int          `json:"h"`
	E []relayEntry `json:"e"`
}

type relayEntry struct {
	P int64           `json:"p"`
	D int64           `json:"d"`
	X string          `json:"x"`
	Z int             `json:"z"`
	Y session.Type    `json:"y"`
	J json.RawMessage `json:"j"`
}

// decodeRelay returns the messages of a payload; none for a payload of
// another format version.
func decodeRelay(payload string) ([]session.Relayed, error) {
	var p relayPayload
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return nil, err
	}
	if p.V != relayVersion {
		return nil, nil
	}
	n := 0
	for _, it := range p.M {
		n += max(1, len(it.E))
	}
	out := make([]session.Relayed, 0, n)
	for _, it := range p.M {
		switch {
		case it.H != 0:
			out = append(out, session.Relayed{Kind: session.RelayHello})
		case it.W != 0:
			out = append(out, session.Relayed{Kind: session.RelayWatching, Tenant: it.T, SessionID: it.S})
		default:
			for _, en := range it.E {
				e := &session.Event{V: session.SchemaVersion, SessionID: it.S, RunID: it.R, Turn: it.U,
					Time: time.UnixMicro(it.B + en.D).UTC(), Agent: it.A}
				if en.Y == "" {
					e.Type, e.Data = session.TypeToken, &session.Token{Text: en.X, Pulse: en.Z != 0}
				} else {
					d, err := session.DecodeData(en.Y, en.J)
					if err != nil {
						return nil, err
					}
					e.Type, e.Data = en.Y, d
				}
				out = append(out, session.Relayed{Kind: session.RelayLive, Tenant: it.T, SessionID: it.S, Event: e, After: en.P})
			}
		}
	}
	return out, nil
}

// listenRelaySQL is the statement that listens on the relay's channel.
func (h *relayHub) listenSQL() string { return `LISTEN ` + pgx.Identifier{h.channel}.Sanitize() }
