// Package sqlitemem is a memory.Store on SQLite's FTS5 full-text index,
// ranked with its BM25: the embedded default, in the same database file
// as the sessions (tables of its own).
package sqlitemem

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/session"
)

// Store is a memory.Store on one SQLite database file.
type Store struct{ db *sql.DB }

var _ memory.Store = (*Store)(nil)

// schema creates the tables: items, and the FTS5 index over their text
// (external content, kept in step by triggers).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS memories (
		rowid    INTEGER PRIMARY KEY,
		tenant   TEXT NOT NULL,
		id       TEXT NOT NULL,
		agent    TEXT NOT NULL,
		session  TEXT NOT NULL,
		text     TEXT NOT NULL,
		metadata TEXT,
		created  INTEGER NOT NULL,
		UNIQUE (tenant, id)
	)`,
	`CREATE INDEX IF NOT EXISTS memories_scope ON memories (tenant, agent, session, rowid DESC)`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text, content='memories', content_rowid='rowid', tokenize='unicode61')`,
	`CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
		INSERT INTO memories_fts (rowid, text) VALUES (new.rowid, new.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
		INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
	END`,
}

// Open opens (creating if need be) the memory tables of the SQLite
// database at path (a file path or a file: URI, as session/sqlite takes).
func Open(ctx context.Context, path string) (*Store, error) {
	dsn := path
	if !strings.HasPrefix(dsn, "file:") {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, err
		}
		dsn = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", dsn+sep+"_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		for _, s := range schema {
			if _, err = tx.ExecContext(ctx, s); err != nil {
				break
			}
		}
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Add stores it.
func (s *Store) Add(ctx context.Context, it memory.Item) (memory.Item, error) {
	if err := memory.CheckItem(it); err != nil {
		return memory.Item{}, err
	}
	var meta any
	if len(it.Metadata) > 0 {
		b, err := json.Marshal(it.Metadata)
		if err != nil {
			return memory.Item{}, err
		}
		meta = string(b)
	}
	it.ID, it.Created = memory.NewID(), time.Now().UTC().Truncate(time.Microsecond)
	_, err := s.db.ExecContext(ctx, `INSERT INTO memories (tenant, id, agent, session, text, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		session.TenantOf(ctx), it.ID, it.Scope.Agent, it.Scope.Session, it.Text, meta, it.Created.UnixMicro())
	if err != nil {
		return memory.Item{}, fmt.Errorf("memory: add: %w", err)
	}
	return it, nil
}

// match turns a query's words into an FTS5 query: each word quoted (so
// nothing is an operator), any of them matching.
func match(words []string) string {
	for i, w := range words {
		words[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(words, " OR ")
}

// Search ranks with FTS5's bm25 (lower is better; Hit.Score is its
// negation).
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	limit, err := memory.CheckQuery(q)
	if err != nil {
		return nil, err
	}
	words := memory.Words(q.Text)
	if len(words) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, m.agent, m.session, m.text, m.metadata, m.created, -bm25(memories_fts)
		FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
		WHERE memories_fts MATCH ? AND m.tenant = ? AND m.agent = ? AND (m.session = '' OR m.session = ?)
		ORDER BY bm25(memories_fts), m.rowid DESC LIMIT ?`,
		match(words), session.TenantOf(ctx), q.Scope.Agent, q.Scope.Session, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	defer rows.Close()
	var hits []memory.Hit
	for rows.Next() {
		var h memory.Hit
		if err := scan(rows, &h.Item, &h.Score); err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

func scan(rows *sql.Rows, it *memory.Item, extra ...any) error {
	var meta sql.NullString
	var created int64
	dst := append([]any{&it.ID, &it.Scope.Agent, &it.Scope.Session, &it.Text, &meta, &created}, extra...)
	if err := rows.Scan(dst...); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	it.Created = time.UnixMicro(created).UTC()
	if meta.Valid {
		if err := json.Unmarshal([]byte(meta.String), &it.Metadata); err != nil {
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
	rows, err := s.db.QueryContext(ctx, `SELECT id, agent, session, text, metadata, created FROM memories
		WHERE tenant = ? AND agent = ? AND session = ? ORDER BY rowid DESC LIMIT ?`,
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
	res, err := s.db.ExecContext(ctx, `DELETE FROM memories WHERE tenant = ? AND id = ?`, session.TenantOf(ctx), id)
	if err != nil {
		return fmt.Errorf("memory: delete: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("memory: delete %q: %w", id, memory.ErrNotFound)
	}
	return nil
}
