package session

import (
	"encoding/json"
	"strconv"
	"time"
)

// AppendJSON appends to b the event as json.Marshal encodes it, byte for
// byte, and returns the extended buffer. Stores encode every event they
// write, and json.Marshal spends most of an event's time on the
// envelope: its time through time.Time's MarshalJSON, whose output it
// then validates again, and each field by reflection. AppendJSON writes
// the envelope itself and leaves the payload (Data) to json.Marshal; an
// envelope it cannot write exactly so (a string to escape, a time out of
// the ordinary) goes to json.Marshal whole.
func (e *Event) AppendJSON(b []byte) ([]byte, error) {
	if !plainJSON(e.SessionID) || !plainJSON(e.RunID) || !plainJSON(string(e.Type)) || !plainJSON(e.Agent) || !plainTime(e.Time) {
		out, err := json.Marshal(e)
		return append(b, out...), err
	}
	start := len(b)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	if e.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, e.Seq, 10)
	}
	b = append(b, `,"session_id":"`...)
	b = append(b, e.SessionID...)
	if e.RunID != "" {
		b = append(b, `","run_id":"`...)
		b = append(b, e.RunID...)
	}
	b = append(b, `","turn":`...)
	b = strconv.AppendInt(b, int64(e.Turn), 10)
	b = append(b, `,"type":"`...)
	b = append(b, e.Type...)
	b = append(b, `","time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if e.Agent != "" {
		b = append(b, `,"agent":"`...)
		b = append(b, e.Agent...)
		b = append(b, '"')
	}
	if e.Data != nil {
		data, err := json.Marshal(e.Data)
		if err != nil {
			out, err := json.Marshal(e) // its error, as json.Marshal words it
			return append(b[:start], out...), err
		}
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, '}'), nil
}

// plainJSON reports whether json.Marshal writes s as it is, between
// quotes: printable ASCII without the characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// plainTime reports whether time.Time's MarshalJSON writes t as
// AppendFormat with RFC3339Nano does: a year of four digits, and a zone
// offset of whole minutes under a day (MarshalJSON refuses the others).
func plainTime(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off%60 == 0 && off > -24*3600 && off < 24*3600
}
