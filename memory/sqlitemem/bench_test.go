package sqlitemem_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/memory/sqlitemem"
)

// BenchmarkSearch100k searches 100,000 stored items of one agent (a
// vocabulary of 2,000 words, 12 words an item) with 2-word queries, and
// reports the median and the 99th percentile of a search.
func BenchmarkSearch100k(b *testing.B) {
	ctx := context.Background()
	s, err := sqlitemem.Open(ctx, filepath.Join(b.TempDir(), "agentrt.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	word := func(i int) string { return fmt.Sprintf("w%04d", (i*7919)%2000) }
	scope := memory.Scope{Agent: "a"}
	for i := range 100_000 {
		text := ""
		for j := range 12 {
			text += word(i*12+j) + " "
		}
		if _, err := s.Add(ctx, memory.Item{Text: text, Scope: scope}); err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	n := 0
	for b.Loop() {
		n++
		start := time.Now()
		if _, err := s.Search(ctx, memory.Query{Text: word(n) + " " + word(n*3), Scope: scope}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}
