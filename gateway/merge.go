package gateway

import (
	"encoding/json"
	"maps"
	"strings"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Merged is a turn's inputs merged into one: what the turn answers.
type Merged struct {
	// Text is the inputs' text parts, in order, one input a paragraph.
	Text string
	// Parts are every input's parts, in order.
	Parts []session.InputPart
	// Media are the images and files the media parts name, in order.
	Media []model.Media
	// Metadata is the inputs' metadata, a newer input's value winning.
	Metadata map[string]string
}

// Merger merges the inputs of a turn, oldest first. It must not keep
// inputs: they may be reused.
type Merger interface {
	Merge(inputs []session.InboxInput) Merged
}

// DefaultMerge merges inputs as a chat does: text in order, parts
// appended, the newest metadata winning.
type DefaultMerge struct{}

// Merge implements Merger.
func (DefaultMerge) Merge(inputs []session.InboxInput) Merged {
	var m Merged
	var texts []string
	for _, in := range inputs {
		var t []string
		for _, p := range in.Parts {
			m.Parts = append(m.Parts, p)
			switch p.Type {
			case "text":
				t = append(t, p.Text)
			case "data":
				t = append(t, string(p.Data))
			case "media":
				var md model.Media
				if json.Unmarshal(p.Data, &md) == nil {
					m.Media = append(m.Media, md)
				}
			}
		}
		if len(t) > 0 {
			texts = append(texts, strings.Join(t, "\n"))
		}
		if len(in.Metadata) > 0 {
			if m.Metadata == nil {
				m.Metadata = make(map[string]string, len(in.Metadata))
			}
			maps.Copy(m.Metadata, in.Metadata)
		}
	}
	m.Text = strings.Join(texts, "\n\n")
	return m
}
