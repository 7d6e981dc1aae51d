package anthropic

import (
	"testing"

	"github.com/agentrt/agentrt/internal/llmhttp"
)

type wireEvent struct{ name, data []byte }

// events returns a reply of n text deltas, then a tool call with n
// argument deltas.
func events(n int) []wireEvent {
	var evs []wireEvent
	add := func(name, data string) { evs = append(evs, wireEvent{[]byte(name), []byte(data)}) }
	add("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`)
	add("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for range n {
		add("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word \u00e9 "}}`)
	}
	add("ping", `{"type":"ping"}`)
	add("content_block_stop", `{"type":"content_block_stop","index":0}`)
	add("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"write","input":{}}}`)
	for range n {
		add("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"a\\\"b\","}}`)
	}
	add("content_block_stop", `{"type":"content_block_stop","index":1}`)
	add("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":99}}`)
	add("message_stop", `{"type":"message_stop"}`)
	return evs
}

// TestDecodeAllocs checks that the allocations of a reply grow with its
// text only (the blocks its strings are made in), not with its events.
func TestDecodeAllocs(t *testing.T) {
	call := &llmhttp.Call{Provider: "anthropic", Model: "m"}
	d := new(decoder)
	allocs := func(evs []wireEvent) float64 {
		return testing.AllocsPerRun(20, func() {
			d.reset()
			for _, e := range evs {
				if _, _, err := d.event(call, e.name, e.data); err != nil {
					panic(err)
				}
			}
		})
	}
	small, large := allocs(events(100)), allocs(events(2000))
	// 2000 deltas of 8 and 6 bytes need ~7 more string blocks than 100 do.
	if small > 8 || large-small > 8 {
		t.Errorf("allocations: %v for 200 deltas, %v for 4000; want them nearly flat", small, large)
	}
	t.Logf("allocations: %v for 200 deltas, %v for 4000", small, large)
}
