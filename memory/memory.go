// Package memory is what agents remember across sessions: pieces of
// text with metadata, kept per tenant (the context's, see
// session.WithTenant) and per agent or session, found again by full-text
// search.
//
// The stores: NewInMemory (tests, embedding), memory/sqlitemem (SQLite
// FTS5, BM25 ranking; the embedded default, beside the sessions) and
// memory/pgmem (Postgres full-text search). All pass memorytest.Run. An
// agent with a Store gets a "retrieve" tool (agentrt.Agent.Memory).
package memory

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
)

// Scope says whose an item is: an agent's, seen in all its sessions
// (Session empty), or one session's.
type Scope struct {
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
}

// An Item is a piece of text an agent remembers.
type Item struct {
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Scope    Scope             `json:"scope"`
	Created  time.Time         `json:"created"`
}

// A Query searches the items an agent can see: its own, and with
// Scope.Session set, that session's too.
type Query struct {
	Text  string
	Scope Scope
	// Limit is how many hits at most; zero means DefaultLimit.
	Limit int
}

// Limits of a search.
const (
	DefaultLimit = 5
	MaxLimit     = 50
)

// A Hit is an item a search found, with its relevance (higher is more
// relevant; comparable only within one search).
type Hit struct {
	Item
	Score float64 `json:"score"`
}

// Store keeps items. Every method works in the context's tenant.
type Store interface {
	// Add stores it and returns it with its ID and Created set.
	Add(ctx context.Context, it Item) (Item, error)
	// Search returns the items matching the query's words, most relevant
	// first.
	Search(ctx context.Context, q Query) ([]Hit, error)
	// List returns the items of exactly scope s, newest first.
	List(ctx context.Context, s Scope, limit int) ([]Item, error)
	// Delete removes an item; ErrNotFound when there is none.
	Delete(ctx context.Context, id string) error
}

// Embedder turns texts into vectors, for a store that searches by
// meaning. None is built yet; it is here so that one can be added
// without changing the Store's callers.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Errors.
var (
	ErrNotFound = errors.New("memory: no such item")
)

// maxText bounds an item's text, maxQuery a query's.
const (
	maxText  = 64 << 10
	maxQuery = 4 << 10
)

// CheckItem reports what makes it unfit to store.
func CheckItem(it Item) error {
	switch {
	case strings.TrimSpace(it.Text) == "":
		return errors.New("memory: the item has no text")
	case len(it.Text) > maxText:
		return errors.New("memory: the item's text is over 64 KiB")
	case it.Scope.Agent == "":
		return errors.New("memory: the item's scope names no agent")
	}
	return nil
}

// CheckQuery reports what makes q unusable, and returns its limit.
func CheckQuery(q Query) (int, error) {
	switch {
	case q.Scope.Agent == "":
		return 0, errors.New("memory: the search names no agent")
	case q.Limit < 0 || q.Limit > MaxLimit:
		return 0, errors.New("memory: limit must be between 1 and 50")
	case len(q.Text) > maxQuery:
		return 0, errors.New("memory: the query is over 4 KiB: search with a few words")
	}
	if q.Limit == 0 {
		return DefaultLimit, nil
	}
	return q.Limit, nil
}

// Words splits text into the words a search matches: letters and digits,
// lower-cased; everything else separates them (so no query can be read as
// an engine's operators).
func Words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(out) == 32 {
			break
		}
		out = append(out, w)
	}
	return out
}
