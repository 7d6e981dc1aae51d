// Package memorytest is the conformance suite of memory.Store: every
// store runs it.
package memorytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/session"
)

// Run runs the suite; newStore returns an empty store for each test.
func Run(t *testing.T, newStore func(t *testing.T) memory.Store) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, s memory.Store)
	}{
		{"AddAndSearch", testAddAndSearch},
		{"Ranking", testRanking},
		{"Scopes", testScopes},
		{"Tenants", testTenants},
		{"ListAndDelete", testListAndDelete},
		{"BadInput", testBadInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

var (
	agentA = memory.Scope{Agent: "a"}
	agentB = memory.Scope{Agent: "b"}
)

func add(t *testing.T, ctx context.Context, s memory.Store, scope memory.Scope, text string, meta map[string]string) memory.Item {
	t.Helper()
	it, err := s.Add(ctx, memory.Item{Text: text, Scope: scope, Metadata: meta})
	if err != nil {
		t.Fatalf("Add(%q): %v", text, err)
	}
	if it.ID == "" || it.Created.IsZero() || it.Text != text {
		t.Fatalf("Add returned %+v", it)
	}
	return it
}

func search(t *testing.T, ctx context.Context, s memory.Store, q memory.Query) []string {
	t.Helper()
	hits, err := s.Search(ctx, q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Text, err)
	}
	var out []string
	for i, h := range hits {
		if h.Score <= 0 || i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("hit %d %q has score %v after %v: want positive, most relevant first", i, h.Text, h.Score, hits[max(i-1, 0)].Score)
		}
		out = append(out, h.Text)
	}
	return out
}

func testAddAndSearch(t *testing.T, s memory.Store) {
	ctx := t.Context()
	it := add(t, ctx, s, agentA, "The user prefers answers in metric units.", map[string]string{"source": "turn 3"})
	add(t, ctx, s, agentA, "Deploys happen on Tuesdays.", nil)
	hits, err := s.Search(ctx, memory.Query{Text: "which UNITS does the user prefer?", Scope: agentA})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != it.ID || hits[0].Metadata["source"] != "turn 3" || hits[0].Scope != agentA {
		t.Fatalf("hits %+v", hits)
	}
	if got := search(t, ctx, s, memory.Query{Text: "nothing matches this", Scope: agentA}); len(got) != 0 {
		t.Errorf("unrelated query found %q", got)
	}
}

func testRanking(t *testing.T, s memory.Store) {
	ctx := t.Context()
	add(t, ctx, s, agentA, "Paris is the capital of France.", nil)
	add(t, ctx, s, agentA, "The Paris office moved; Paris rent is high; the Paris team grew.", nil)
	add(t, ctx, s, agentA, "Berlin is the capital of Germany.", nil)
	got := search(t, ctx, s, memory.Query{Text: "Paris", Scope: agentA})
	if len(got) != 2 || !strings.HasPrefix(got[0], "The Paris office") {
		t.Errorf("Paris: %q, want the text that says it most first", got)
	}
	if got := search(t, ctx, s, memory.Query{Text: "capital of Germany", Scope: agentA}); len(got) == 0 || !strings.HasPrefix(got[0], "Berlin") {
		t.Errorf("capital of Germany: %q", got)
	}
	for i := range 8 {
		add(t, ctx, s, agentA, fmt.Sprintf("note %d about capital cities", i), nil)
	}
	if got := search(t, ctx, s, memory.Query{Text: "capital", Scope: agentA, Limit: 3}); len(got) != 3 {
		t.Errorf("limit 3: %d hits", len(got))
	}
	if got := search(t, ctx, s, memory.Query{Text: "capital", Scope: agentA}); len(got) != memory.DefaultLimit {
		t.Errorf("default limit: %d hits", len(got))
	}
}

func testScopes(t *testing.T, s memory.Store) {
	ctx := t.Context()
	add(t, ctx, s, agentA, "shared fact about zebras", nil)
	add(t, ctx, s, memory.Scope{Agent: "a", Session: "s1"}, "session one fact about zebras", nil)
	add(t, ctx, s, memory.Scope{Agent: "a", Session: "s2"}, "session two fact about zebras", nil)
	add(t, ctx, s, agentB, "agent b fact about zebras", nil)
	got := search(t, ctx, s, memory.Query{Text: "zebras", Scope: memory.Scope{Agent: "a", Session: "s1"}})
	want := []string{"session one fact about zebras", "shared fact about zebras"}
	if diff := cmp.Diff(sorted(want), sorted(got)); diff != "" {
		t.Errorf("a in s1 (-want +got):\n%s", diff)
	}
	if got := search(t, ctx, s, memory.Query{Text: "zebras", Scope: agentA}); len(got) != 1 || got[0] != "shared fact about zebras" {
		t.Errorf("a without a session: %q", got)
	}
	if got := search(t, ctx, s, memory.Query{Text: "zebras", Scope: agentB}); len(got) != 1 || got[0] != "agent b fact about zebras" {
		t.Errorf("b: %q", got)
	}
}

func testTenants(t *testing.T, s memory.Store) {
	acme, globex := session.WithTenant(t.Context(), "acme"), session.WithTenant(t.Context(), "globex")
	it := add(t, acme, s, agentA, "acme's secret plan", nil)
	if got := search(t, globex, s, memory.Query{Text: "secret plan", Scope: agentA}); len(got) != 0 {
		t.Errorf("globex found acme's items: %q", got)
	}
	if items, err := s.List(globex, agentA, 0); err != nil || len(items) != 0 {
		t.Errorf("globex lists %+v %v", items, err)
	}
	if err := s.Delete(globex, it.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("globex deleted acme's item: %v", err)
	}
	if got := search(t, acme, s, memory.Query{Text: "secret plan", Scope: agentA}); len(got) != 1 {
		t.Errorf("acme: %q", got)
	}
}

func testListAndDelete(t *testing.T, s memory.Store) {
	ctx := t.Context()
	first := add(t, ctx, s, agentA, "first", nil)
	second := add(t, ctx, s, agentA, "second", map[string]string{"k": "v"})
	add(t, ctx, s, memory.Scope{Agent: "a", Session: "s1"}, "in a session", nil)
	items, err := s.List(ctx, agentA, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].ID != second.ID || items[1].ID != first.ID || items[0].Metadata["k"] != "v" {
		t.Fatalf("List: %+v, want second then first", items)
	}
	if err := s.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, first.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if got := search(t, ctx, s, memory.Query{Text: "first", Scope: agentA}); len(got) != 0 {
		t.Errorf("a deleted item is found: %q", got)
	}
	if items, _ := s.List(ctx, agentA, 1); len(items) != 1 {
		t.Errorf("List limit 1: %d", len(items))
	}
}

func testBadInput(t *testing.T, s memory.Store) {
	ctx := t.Context()
	for _, it := range []memory.Item{
		{Text: "  ", Scope: agentA},
		{Text: "no agent"},
		{Text: strings.Repeat("x", 65<<10), Scope: agentA},
	} {
		if _, err := s.Add(ctx, it); err == nil {
			t.Errorf("Add(%.20q, %+v) was accepted", it.Text, it.Scope)
		}
	}
	if _, err := s.Search(ctx, memory.Query{Text: "x", Scope: agentA, Limit: 51}); err == nil {
		t.Error("limit 51 was accepted")
	}
	if _, err := s.Search(ctx, memory.Query{Text: "x"}); err == nil {
		t.Error("a search without an agent was accepted")
	}
	if _, err := s.Search(ctx, memory.Query{Text: strings.Repeat("word ", 1000), Scope: agentA}); err == nil || err.Error() != "memory: the query is over 4 KiB: search with a few words" {
		t.Errorf("a huge query: %v", err)
	}
	// An empty query finds nothing, without an error.
	if hits, err := s.Search(ctx, memory.Query{Text: "   ", Scope: agentA}); err != nil || len(hits) != 0 {
		t.Errorf("an empty query: %v %v", hits, err)
	}
	// A query is words: the engines' operators are just text.
	add(t, ctx, s, agentA, "quotes and stars are harmless", nil)
	for _, q := range []string{`"unclosed`, `stars*`, `AND OR NOT`, `a:b (c) -d ^e ~f`, `'; DROP TABLE memories; --`, ``, `!!!`} {
		if _, err := s.Search(ctx, memory.Query{Text: q, Scope: agentA}); err != nil {
			t.Errorf("Search(%q): %v", q, err)
		}
	}
	if got := search(t, ctx, s, memory.Query{Text: `"stars*`, Scope: agentA}); len(got) != 1 {
		t.Errorf(`Search("stars*): %q`, got)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
