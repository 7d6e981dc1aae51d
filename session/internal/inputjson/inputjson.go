// Package inputjson is how the SQL stores keep an inbox input's parts and
// metadata: as JSON text, the same in every store, so that every store
// gives back the same bytes (see session.InputPart).
package inputjson

import (
	"bytes"
	"encoding/json"
	"fmt"

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
