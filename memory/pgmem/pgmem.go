// Package pgmem is a memory.Store on Postgres full-text search (a
// tsvector column with a GIN index, ranked with ts_rank_cd), for when the
// sessions are in Postgres: same database, tables of its own.
package pgmem

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// Store is a memory.Store on a Postgres database.
type Store struct{ pool *pgxpool.Pool }

var _ memory.Store = (*Store)(nil)

// schema is created on Open, under an advisory lock.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS memories (
		seq      bigserial PRIMARY KEY,
		tenant   text   NOT NULL,
		id       text   NOT NULL,
		agent    text   NOT NULL,
		session  text   NOT NULL,
		text     text   NOT NULL,
		metadata text,
		created  bigint NOT NULL,
		tsv      tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
		UNIQUE (tenant, id)
	)`,
	`CREATE INDEX IF NOT EXISTS memories_tsv ON memories USING gin (tsv)`,
	`CREATE INDEX IF NOT EXISTS memories_scope ON memories (tenant, agent, session, seq DESC)`,
}

// Open connects to the database named by dsn (as session/postgres takes
// it) and creates the memory tables if need be.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("memory: %s: %w", postgres.Redact(dsn), err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7419352104)`); err != nil {
			return err
		}
		for _, s := range schema {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("memory: %s: %w", postgres.Redact(dsn), err)
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Add stores it.
func (s *Store) Add(ctx context.Context, it memory.Item) (memory.Item, error) {
	if err := memory.CheckItem(it); err != nil {
		return memory.Item{}, err
	}
	var meta *string
	if len(it.Metadata) > 0 {
		b, err := json.Marshal(it.Metadata)
		if err != nil {
			return memory.Item{}, err
		}
		m := string(b)
		meta = &m
	}
	it.ID, it.Created = memory.NewID(), time.Now().UTC().Truncate(time.Microsecond)
	_, err := s.pool.Exec(ctx, `INSERT INTO memories (tenant, id, agent, session, text, metadata, created) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		session.TenantOf(ctx), it.ID, it.Scope.Agent, it.Scope.Session, it.Text, meta, it.Created.UnixMicro())
	if err != nil {
		return memory.Item{}, fmt.Errorf("memory: add: %w", err)
	}
	return it, nil
}

// Search ranks with ts_rank_cd over the words of the query, any of them
// matching (each word quoted, so none is an operator).
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	limit, err := memory.CheckQuery(q)
	if err != nil {
		return nil, err
	}
	words := memory.Words(q.Text)
	if len(words) == 0 {
		return nil, nil
	}
	for i, w := range words {
		words[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	rows, err := s.pool.Query(ctx, `SELECT id, agent, session, text, metadata, created, ts_rank_cd(tsv, query) AS score
		FROM memories, to_tsquery('simple', $1) query
		WHERE tsv @@ query AND tenant = $2 AND agent = $3 AND (session = '' OR session = $4)
		ORDER BY score DESC, seq DESC LIMIT $5`,
		strings.Join(words, " | "), session.TenantOf(ctx), q.Scope.Agent, q.Scope.Session, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	var hits []memory.Hit
	for rows.Next() {
		var h memory.Hit
		var score float32
		if err := scan(rows, &h.Item, &score); err != nil {
			rows.Close()
			return nil, err
		}
		h.Score = float64(score)
		hits = append(hits, h)
	}
	rows.Close()
	return hits, rows.Err()
}

func scan(rows pgx.Rows, it *memory.Item, extra ...any) error {
	var meta *string
	var created int64
	if err := rows.Scan(append([]any{&it.ID, &it.Scope.Agent, &it.Scope.Session, &it.Text, &meta, &created}, extra...)...); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	it.Created = time.UnixMicro(created).UTC()
	if meta != nil {
		if err := json.Unmarshal([]byte(*meta), &it.Metadata); err != nil {
			return fmt.Errorf("memory: item %s: bad metadata: %w", it.ID, err)
		}
	}
	return nil
}

// List returns the items of exactly scope sc, newest first.
func (s *Store) List(ctx context.Context, sc memory.Scope, limit int) ([]memory.Item, error) {
	if limit <= 0 {
		limit = memory.MaxLimit
	}
	rows, err := s.pool.Query(ctx, `SELECT id, agent, session, text, metadata, created FROM memories
		WHERE tenant = $1 AND agent = $2 AND session = $3 ORDER BY seq DESC LIMIT $4`,
		session.TenantOf(ctx), sc.Agent, sc.Session, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	defer rows.Close()
	var out []memory.Item
	for rows.Next() {
		var it memory.Item
		if err := scan(rows, &it); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// Delete removes an item.
func (s *Store) Delete(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM memories WHERE tenant = $1 AND id = $2`, session.TenantOf(ctx), id)
	if err != nil {
		return fmt.Errorf("memory: delete: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("memory: delete %q: %w", id, memory.ErrNotFound)
	}
	return nil
}
