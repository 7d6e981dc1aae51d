package jsonscan_test

import (
	"fmt"

	"github.com/agentrt/agentrt/internal/jsonscan"
)

// A client accumulates the text of streamed deltas with one reused Scanner
// and buffer, so no chunk allocates.
func Example() {
	chunks := []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, "}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w\u00f6rld"}}`,
	}
	var s jsonscan.Scanner
	var text []byte
	for _, chunk := range chunks {
		s.Reset([]byte(chunk))
		s.EnterObject()
		for {
			key, ok := s.NextKey()
			if !ok {
				break
			}
			if string(key) != "delta" || !s.EnterObject() {
				s.Skip()
				continue
			}
			for {
				key, ok := s.NextKey()
				if !ok {
					break
				}
				if string(key) == "text" {
					if t, ok := s.AppendStr(text); ok {
						text = t
						continue
					}
				}
				s.Skip()
			}
		}
		if !s.End() {
			fmt.Println("bad chunk:", s.Err())
			return
		}
	}
	fmt.Println(string(text))
	// Output: Hello, wörld
}

// Errors are sticky and carry the byte offset, so a walk checks once at
// the end.
func ExampleScanner_Err() {
	var s jsonscan.Scanner
	s.Reset([]byte(`{"a":[1,2,}`))
	s.Skip()
	s.End()
	fmt.Println(s.Err())
	// Output: jsonscan: invalid character '}' looking for beginning of value at offset 10
}
