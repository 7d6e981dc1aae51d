package jsonscan

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// openAIDelta is what a client takes from a chat.completion.chunk, parsed
// the way a client would with a Scanner. Its buffers are reused.
type openAIDelta struct {
	ID           []byte
	Index        int64
	Content      []byte
	FinishReason []byte // nil while the choice goes on
}

func (c *openAIDelta) parse(s *Scanner, data []byte) error {
	*c = openAIDelta{ID: c.ID[:0], Content: c.Content[:0], FinishReason: c.FinishReason[:0]}
	s.Reset(data)
	s.EnterObject()
	for {
		key, ok := s.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "id":
			c.ID = appendStr(s, c.ID)
		case "choices":
			if !s.EnterArray() {
				s.Skip()
				continue
			}
			for s.NextElem() {
				c.parseChoice(s)
			}
		default:
			s.Skip()
		}
	}
	s.End()
	return s.Err()
}

func (c *openAIDelta) parseChoice(s *Scanner) {
	if !s.EnterObject() {
		s.Skip()
		return
	}
	for {
		key, ok := s.NextKey()
		if !ok {
			return
		}
		switch string(key) {
		case "index":
			c.Index = intOrSkip(s)
		case "delta":
			if !s.EnterObject() {
				s.Skip()
				continue
			}
			for {
				key, ok := s.NextKey()
				if !ok {
					break
				}
				if string(key) == "content" {
					c.Content = appendStr(s, c.Content)
				} else {
					s.Skip()
				}
			}
		case "finish_reason":
			if s.Null() {
				c.FinishReason = nil
			} else {
				c.FinishReason = appendStr(s, c.FinishReason)
			}
		default:
			s.Skip()
		}
	}
}

// anthropicDelta is what a client takes from a content_block_delta event.
type anthropicDelta struct {
	Type        []byte
	Index       int64
	DeltaType   []byte
	Text        []byte
	PartialJSON []byte
}

func (a *anthropicDelta) parse(s *Scanner, data []byte) error {
	*a = anthropicDelta{Type: a.Type[:0], DeltaType: a.DeltaType[:0], Text: a.Text[:0], PartialJSON: a.PartialJSON[:0]}
	s.Reset(data)
	s.EnterObject()
	for {
		key, ok := s.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			a.Type = appendStr(s, a.Type)
		case "index":
			a.Index = intOrSkip(s)
		case "delta":
			if !s.EnterObject() {
				s.Skip()
				continue
			}
			for {
				key, ok := s.NextKey()
				if !ok {
					break
				}
				switch string(key) {
				case "type":
					a.DeltaType = appendStr(s, a.DeltaType)
				case "text":
					a.Text = appendStr(s, a.Text)
				case "partial_json":
					a.PartialJSON = appendStr(s, a.PartialJSON)
				default:
					s.Skip()
				}
			}
		default:
			s.Skip()
		}
	}
	s.End()
	return s.Err()
}

// appendStr appends a string value to dst, skipping a value of another kind.
func appendStr(s *Scanner, dst []byte) []byte {
	if v, ok := s.AppendStr(dst); ok {
		return v
	}
	s.Skip()
	return dst
}

func intOrSkip(s *Scanner) int64 {
	if n, ok := s.Int(); ok {
		return n
	}
	s.Skip()
	return 0
}

// The encoding/json equivalents: just the fields the parsers above take.
type openAIChunkJSON struct {
	ID      string `json:"id"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

type anthropicDeltaJSON struct {
	Type  string `json:"type"`
	Index int64  `json:"index"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
}

func TestTypedParseMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	var s Scanner

	var o openAIDelta
	if err := o.parse(&s, []byte(openAIChunk)); err != nil {
		t.Fatal(err)
	}
	var oj openAIChunkJSON
	if err := json.Unmarshal([]byte(openAIChunk), &oj); err != nil {
		t.Fatal(err)
	}
	gotO := []any{string(o.ID), o.Index, string(o.Content), o.FinishReason == nil}
	wantO := []any{oj.ID, oj.Choices[0].Index, oj.Choices[0].Delta.Content, oj.Choices[0].FinishReason == nil}
	if diff := cmp.Diff(wantO, gotO); diff != "" {
		t.Errorf("OpenAI chunk (-encoding/json +scanner):\n%s", diff)
	}

	var a anthropicDelta
	if err := a.parse(&s, []byte(anthropicChunk)); err != nil {
		t.Fatal(err)
	}
	var aj anthropicDeltaJSON
	if err := json.Unmarshal([]byte(anthropicChunk), &aj); err != nil {
		t.Fatal(err)
	}
	gotA := []any{string(a.Type), a.Index, string(a.DeltaType), string(a.Text), string(a.PartialJSON)}
	wantA := []any{aj.Type, aj.Index, aj.Delta.Type, aj.Delta.Text, aj.Delta.PartialJSON}
	if diff := cmp.Diff(wantA, gotA); diff != "" {
		t.Errorf("Anthropic chunk (-encoding/json +scanner):\n%s", diff)
	}
}

// BenchmarkScanChunk compares a Scanner with json.Unmarshal into a struct
// holding just the fields wanted, per chunk.
func BenchmarkScanChunk(b *testing.B) {
	for _, tt := range []struct {
		name    string
		chunk   string
		scanner func(*Scanner, []byte) error
		stdlib  func([]byte) error
	}{
		{
			name:  "openai",
			chunk: openAIChunk,
			scanner: func() func(*Scanner, []byte) error {
				var c openAIDelta
				return c.parse
			}(),
			stdlib: func(data []byte) error {
				var c openAIChunkJSON
				return json.Unmarshal(data, &c)
			},
		},
		{
			name:  "anthropic",
			chunk: anthropicChunk,
			scanner: func() func(*Scanner, []byte) error {
				var a anthropicDelta
				return a.parse
			}(),
			stdlib: func(data []byte) error {
				var a anthropicDeltaJSON
				return json.Unmarshal(data, &a)
			},
		},
	} {
		data := []byte(tt.chunk)
		b.Run(tt.name+"/jsonscan", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var s Scanner
			for b.Loop() {
				if err := tt.scanner(&s, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/walk", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var s Scanner
			for b.Loop() {
				if err := walk(&s, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/skip", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var s Scanner
			for b.Loop() {
				s.Reset(data)
				s.Skip()
				if !s.End() {
					b.Fatal(s.Err())
				}
			}
		})
		b.Run(tt.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := tt.stdlib(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
