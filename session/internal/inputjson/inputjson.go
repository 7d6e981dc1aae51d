// Package inputjson is what the SQL stores share of the inbox: an input's
// parts and metadata kept as JSON text, the same in every store, so that
// every store gives back the same bytes (see session.InputPart), and the
// reading of the pending sources' rows.
package inputjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Encode returns in's parts as a JSON array, with each data part compact
// and HTML left unescaped (encoding/json would escape <, > and & inside
// the data, changing its bytes), and its metadata as a JSON object, or
// nil when it has none.
func Encode(in *session.InboxInput) (parts string, metadata *string, err error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	p := in.Parts
	if p == nil {
		p = []session.InputPart{}
	}
	if err := enc.Encode(p); err != nil {
		return "", nil, fmt.Errorf("input %q: encoding its parts: %w", in.ID, err)
	}
	parts = string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if len(in.Metadata) > 0 {
		b, err := json.Marshal(in.Metadata)
		if err != nil {
			return "", nil, fmt.Errorf("input %q: encoding its metadata: %w", in.ID, err)
		}
		m := string(b)
		metadata = &m
	}
	return parts, metadata, nil
}

// Decode sets in's Parts and Metadata from what Encode returned (metadata
// nil for none).
func Decode(in *session.InboxInput, parts, metadata []byte) error {
	if err := json.Unmarshal(parts, &in.Parts); err != nil {
		return fmt.Errorf("input %q: corrupt parts: %w", in.ID, err)
	}
	if metadata != nil {
		if err := json.Unmarshal(metadata, &in.Metadata); err != nil {
			return fmt.Errorf("input %q: corrupt metadata: %w", in.ID, err)
		}
	}
	return nil
}

// Rows is what both SQL drivers' result sets give: database/sql's
// *sql.Rows and pgx's pgx.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// SourceStates reads the rows of the stores' pending-sources query:
// tenant, source, pending count, their size, the first and last pending
// inputs' times (unix µs), the version and the newest input's session.
// name prefixes its errors.
func SourceStates(rows Rows, name string) ([]session.SourceState, error) {
	var out []session.SourceState
	for rows.Next() {
		var (
			s           session.SourceState
			first, last int64
		)
		if err := rows.Scan(&s.Tenant, &s.Source, &s.Pending, &s.Bytes, &first, &last, &s.Version, &s.SessionID); err != nil {
			return nil, fmt.Errorf("%s: pending sources: %w", name, err)
		}
		s.First, s.Last = time.UnixMicro(first).UTC(), time.UnixMicro(last).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: pending sources: %w", name, err)
	}
	return out, nil
}

// Size is in's size as stored (session.InboxInput.Size of its parts
// once Encode has made its data compact): what a store keeps beside its
// parts, so that a source's pending bytes add up without decoding them.
func Size(in *session.InboxInput) int {
	n := 0
	var buf bytes.Buffer
	for _, p := range in.Parts {
		n += len(p.Text)
		if p.Data == nil {
			continue
		}
		buf.Reset()
		if json.Compact(&buf, p.Data) != nil {
			n += len(p.Data) // Encode refuses it
			continue
		}
		n += buf.Len()
	}
	return n
}
