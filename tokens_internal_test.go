package agentrt

import (
	"testing"

	"github.com/agentrt/agentrt/model"
)

// The token counter uses tiktoken's encoding for models it knows, offline,
// and estimates for others.
func TestTokenCounter(t *testing.T) {
	var c tokenCounter
	msgs := []model.Message{model.TextMessage(model.RoleUser, "hello world")}
	if n, exact := c.count("gpt-4o", msgs); !exact || n != 2+4 {
		t.Errorf("gpt-4o: %d tokens (exact %v), want 6, exact", n, exact)
	}
	if n, exact := c.count("claude-sonnet-4-5", msgs); exact || n != (11+16+3)/4 {
		t.Errorf("claude: %d tokens (exact %v), want the estimate %d", n, exact, (11+16+3)/4)
	}
}

// BenchmarkTokenCount counts a 500-message history with gpt-4o's
// encoding (loaded once, before the timer).
func BenchmarkTokenCount(b *testing.B) {
	var msgs []model.Message
	for i := range 500 {
		msgs = append(msgs, model.TextMessage(model.RoleUser, "Here is what I found about range over function types in Go, message "+string(rune('a'+i%26))))
	}
	var c tokenCounter
	c.count("gpt-4o", msgs[:1])
	b.ReportAllocs()
	for b.Loop() {
		c.count("gpt-4o", msgs)
	}
}
