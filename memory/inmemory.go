package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
)

// NewInMemory returns a Store in memory, ranking with BM25 over the
// items the query can see.
func NewInMemory() Store { return &inMemory{items: map[string]*stored{}} }

type inMemory struct {
	mu    sync.Mutex
	items map[string]*stored // by tenant + "\x00" + id
	seq   int
}

type stored struct {
	Item
	tenant string
	words  []string
	seq    int
}

// NewID returns a new item id; the stores use it.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "mem_" + hex.EncodeToString(b[:])
}

func (m *inMemory) Add(ctx context.Context, it Item) (Item, error) {
	if err := CheckItem(it); err != nil {
		return Item{}, err
	}
	it.ID, it.Created = NewID(), time.Now().UTC()
	it.Metadata = maps.Clone(it.Metadata)
	tenant := session.TenantOf(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	m.items[tenant+"\x00"+it.ID] = &stored{Item: it, tenant: tenant, words: Words(it.Text), seq: m.seq}
	return it, nil
}

func (m *inMemory) Search(ctx context.Context, q Query) ([]Hit, error) {
	limit, err := CheckQuery(q)
	if err != nil {
		return nil, err
	}
	terms := Words(q.Text)
	tenant := session.TenantOf(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	var docs []*stored
	total := 0
	for _, s := range m.items {
		if s.tenant == tenant && visible(s.Scope, q.Scope) {
			docs = append(docs, s)
			total += len(s.words)
		}
	}
	if len(docs) == 0 || len(terms) == 0 {
		return nil, nil
	}
	avg := float64(total) / float64(len(docs))
	df := map[string]int{}
	for _, t := range terms {
		for _, d := range docs {
			if slices.Contains(d.words, t) {
				df[t]++
			}
		}
	}
	// BM25 with k1 = 1.2, b = 0.75.
	var hits []Hit
	for _, d := range docs {
		score := 0.0
		for _, t := range terms {
			tf := 0
			for _, w := range d.words {
				if w == t {
					tf++
				}
			}
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (float64(len(docs))-float64(df[t])+0.5)/(float64(df[t])+0.5))
			score += idf * float64(tf) * 2.2 / (float64(tf) + 1.2*(0.25+0.75*float64(len(d.words))/avg))
		}
		if score > 0 {
			it := d.Item
			it.Metadata = maps.Clone(it.Metadata)
			hits = append(hits, Hit{Item: it, Score: score})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return b.Created.Compare(a.Created)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// visible reports whether an item of scope s is seen by a search in q.
func visible(s, q Scope) bool {
	return s.Agent == q.Agent && (s.Session == "" || s.Session == q.Session)
}

func (m *inMemory) List(ctx context.Context, s Scope, limit int) ([]Item, error) {
	if limit <= 0 {
		limit = MaxLimit
	}
	tenant := session.TenantOf(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*stored
	for _, it := range m.items {
		if it.tenant == tenant && it.Scope == s {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b *stored) int { return b.seq - a.seq })
	items := make([]Item, 0, min(len(out), limit))
	for _, it := range out[:min(len(out), limit)] {
		c := it.Item
		c.Metadata = maps.Clone(c.Metadata)
		items = append(items, c)
	}
	return items, nil
}

func (m *inMemory) Delete(ctx context.Context, id string) error {
	k := session.TenantOf(ctx) + "\x00" + id
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[k]; !ok {
		return ErrNotFound
	}
	delete(m.items, k)
	return nil
}
