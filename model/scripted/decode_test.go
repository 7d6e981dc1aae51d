package scripted

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
)

func TestDecodeEveryKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := decode("full.yaml", data, false)
	if err != nil {
		t.Fatal(err)
	}
	name, got := s.name, s.replies
	if name != "everything" || s.play != playInOrder {
		t.Errorf("name %q, play %q; want everything, in_order", name, s.play)
	}
	want := []Reply{
		{
			Text: "Let me compute that.",
			ToolCalls: []Call{
				{ID: "call_a", Name: "calculator",
					Arguments: `{"expression":"2+2","precision":2,"exact":true,"tags":["a","b"],"none":null,"when":"2024-01-02"}`},
				{Name: "clock"},
				{Name: "search", Arguments: `{"q": "agentrt"}`},
				{Name: "broken", Arguments: `{"q": `, Verbatim: true},
			},
			Chunks:       3,
			Delay:        1500 * time.Millisecond,
			Usage:        &model.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 2, CostUSD: 0.001},
			FinishReason: model.FinishToolCalls,
			Expect: &Expect{
				LastUserContains:       "2+2",
				LastToolResultContains: `"result":4`,
				ToolsInclude:           []string{"calculator", "clock"},
			},
		},
		{Text: "4"},
		{Error: "upstream timeout"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if _, err := build(name, got); err != nil {
		t.Errorf("build: %v", err)
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 3, []string{""}},
		{"abc", 0, []string{"abc"}},
		{"abc", 1, []string{"abc"}},
		{"abcdef", 3, []string{"ab", "cd", "ef"}},
		{"abcdefg", 3, []string{"ab", "cd", "efg"}},
		{"héllo", 5, []string{"h", "é", "l", "l", "o"}},
		{"日本語", 2, []string{"日", "本語"}},
		{"ab", 9, []string{"a", "b"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, split(tt.s, tt.n)); diff != "" {
			t.Errorf("split(%q, %d) (-want +got):\n%s", tt.s, tt.n, diff)
		}
	}
}
