// Package reqindex is what the stores share of session.RequestIndex and
// session.LeaseIndex: what a commit's events do to its session's pending
// requests, a request as the stores keep it (the same bytes in every
// store), and the bounds of a range of owners.
package reqindex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/session"
)

// Row is a request as the stores keep it: the input_required event's
// seq, agent (empty when the event names none: the session's then),
// the request's id and kind, when it was asked and when it expires, in
// unix microseconds, and the event's payload as JSON.
type Row struct {
	RequestID string
	Seq       int64
	Agent     string
	Kind      string
	Asked     int64
	// Expires is nil for a request that never expires. It is rounded up
	// to the microsecond, so that a request is never taken for expired
	// before it is (the runtime compares to the nanosecond).
	Expires *int64
	Data    []byte
}

// Changes returns what evs, committed in this order, do to their
// session's pending requests: the rows of the requests they ask that are
// still pending after them, and the ids of the requests they answer,
// which may have been asked before. The two never share an id, so that a
// store may apply them in any order (or in one statement). A request
// asked again replaces the one of the same id. An event of either type
// without a payload changes nothing; one whose payload does not decode
// is an error.
func Changes(evs []*session.Event) (asked []Row, resolved []string, err error) {
	for _, ev := range evs {
		switch ev.Type {
		case session.TypeInputRequired, session.TypeApprovalRequired:
			d, ok, err := session.As[session.InputRequired](ev)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				continue // no payload: no request to keep
			}
			row, err := rowOf(ev, d)
			if err != nil {
				return nil, nil, err
			}
			asked = drop(asked, d.RequestID)
			resolved = dropID(resolved, d.RequestID)
			asked = append(asked, row)
		case session.TypeInputResolved, session.TypeApprovalResolved:
			d, ok, err := session.As[session.InputResolved](ev)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				continue
			}
			// Answered here or before: either way the request is gone,
			// and a row of its id stored before must go.
			asked = drop(asked, d.RequestID)
			if !contains(resolved, d.RequestID) {
				resolved = append(resolved, d.RequestID)
			}
		}
	}
	return asked, resolved, nil
}

// Pending folds a session's whole log, in order, into its pending
// requests: what a migration fills the index with.
func Pending(evs []*session.Event) ([]Row, error) {
	asked, _, err := Changes(evs)
	return asked, err
}

func rowOf(ev *session.Event, d *session.InputRequired) (Row, error) {
	// Not json.Marshal: it would escape <, > and & in the calls'
	// arguments, changing their bytes from the event's.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return Row{}, fmt.Errorf("event %d: encoding request %q: %w", ev.Seq, d.RequestID, err)
	}
	r := Row{RequestID: d.RequestID, Seq: ev.Seq, Agent: ev.Agent, Kind: string(d.Kind), Asked: ev.Time.UnixMicro(),
		Data: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}
	if d.Expires != nil {
		e := CeilMicro(*d.Expires)
		r.Expires = &e
	}
	return r, nil
}

// CeilMicro returns t in unix microseconds, rounded up.
func CeilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if t.Nanosecond()%1000 != 0 {
		us++
	}
	return us
}

func drop(rows []Row, id string) []Row {
	for i, r := range rows {
		if r.RequestID == id {
			return append(rows[:i], rows[i+1:]...)
		}
	}
	return rows
}

func dropID(ids []string, id string) []string {
	for i, x := range ids {
		if x == id {
			return append(ids[:i], ids[i+1:]...)
		}
	}
	return ids
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Decode returns the pending request a store's row holds.
func Decode(tenant, sessionID, agent string, seq, asked int64, data []byte) (session.PendingRequest, error) {
	p := session.PendingRequest{Tenant: tenant, SessionID: sessionID, Agent: agent, Seq: seq, Asked: time.UnixMicro(asked).UTC()}
	if err := json.Unmarshal(data, &p.Request); err != nil {
		return session.PendingRequest{}, fmt.Errorf("session %q: the request of event %d does not decode: %w", sessionID, seq, err)
	}
	return p, nil
}

// PrefixEnd returns the least string above every string that begins
// with p, in the order of their bytes (SQLite's BINARY, Postgres's "C"),
// and valid UTF-8 when p is: so that owner >= p AND owner < PrefixEnd(p)
// is exactly the owners that begin with p, through an index. It is ""
// when there is none (p is empty, or all U+10FFFF or 0xFF bytes).
func PrefixEnd(p string) string {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		last := p[len(p)-size:]
		p = p[:len(p)-size]
		switch {
		case r == utf8.RuneError && size == 1:
			// A byte that is not UTF-8: the byte after it, if any.
			if b := last[0]; b < 0xFF {
				return p + string([]byte{b + 1})
			}
		case r == utf8.MaxRune:
			// Carry into the rune before.
		case r == 0xD7FF:
			return p + string(rune(0xE000)) // past the surrogates, which UTF-8 cannot hold
		default:
			return p + string(r+1)
		}
	}
	return ""
}
