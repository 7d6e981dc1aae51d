package agentrt

import (
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/agentrt/agentrt/model"
)

// tokenCounter counts the tokens of messages for a model: exactly with
// the model's tiktoken encoding when tiktoken knows the model (OpenAI's),
// else with a cheap estimate (about four bytes a token). Encodings load on
// first use, from the offline loader's embedded files (the plain package
// would download them), and are kept for the runner's life.
type tokenCounter struct {
	mu   sync.Mutex
	encs map[string]*tiktoken.Tiktoken // by model name; nil for unknown models
}

// loaderOnce installs the offline loader: tiktoken keeps its loader in a
// package variable, so it is set once per process.
var loaderOnce sync.Once

func (c *tokenCounter) encoding(modelName string) *tiktoken.Tiktoken {
	c.mu.Lock()
	defer c.mu.Unlock()
	if enc, ok := c.encs[modelName]; ok {
		return enc
	}
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	enc, err := tiktoken.EncodingForModel(modelName)
	if err != nil {
		enc = nil // not a model tiktoken knows: estimate
	}
	if c.encs == nil {
		c.encs = make(map[string]*tiktoken.Tiktoken)
	}
	c.encs[modelName] = enc
	return enc
}

// count returns the tokens of msgs for the named model, and whether the
// count is exact.
func (c *tokenCounter) count(modelName string, msgs []model.Message) (int, bool) {
	enc := c.encoding(modelName)
	if enc == nil {
		return estimateMessages(msgs), false
	}
	n := 0
	for i := range msgs {
		m := &msgs[i]
		n += 4 // the message's framing, as OpenAI counts it
		for _, p := range m.Parts {
			n += len(enc.Encode(p.Text, nil, nil))
		}
		for _, tc := range m.ToolCalls {
			n += len(enc.Encode(tc.Name, nil, nil)) + len(enc.Encode(string(tc.Arguments), nil, nil))
		}
	}
	return n, true
}

// estimateMessages estimates the tokens of msgs at about four bytes a
// token, the common rule for English text and JSON.
func estimateMessages(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		m := &msgs[i]
		for _, p := range m.Parts {
			n += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
		n += 16 // the message's framing, in bytes
	}
	return (n + 3) / 4
}
