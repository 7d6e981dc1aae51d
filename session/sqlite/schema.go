package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations[v] takes the schema from version v to version v+1, so
// len(migrations) is the version this build writes. Append to it; never
// edit a migration that has shipped.
//
// A session has a text id and an integer sid, assigned once and never
// reused (AUTOINCREMENT). An event's row is keyed by sid<<32 | seq: the log
// of a session is one contiguous range of the events table's own b-tree,
// so an append writes no secondary index and a read is a range scan. That
// bounds seq below 2^32 and sid below 2^31. (A WITHOUT ROWID table keyed
// by (session_id, seq) would do the same, but its rows spill into overflow
// pages above ~1 KB, which events often are.)
//
// Times are INTEGER unix microseconds, UTC. events.json is the whole event
// as json.Marshal produces it; events.session_id, type and time copy some
// of its fields for people and queries. metadata is a JSON object, NULL
// when empty; usage is a JSON model.Usage.
var migrations = [][]string{
	{
		`CREATE TABLE sessions (
			sid        INTEGER PRIMARY KEY AUTOINCREMENT,
			id         TEXT    NOT NULL UNIQUE,
			agent      TEXT    NOT NULL,
			status     TEXT    NOT NULL,
			turn       INTEGER NOT NULL,
			usage      TEXT    NOT NULL,
			last_seq   INTEGER NOT NULL,
			metadata   TEXT,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL
		)`,
		`CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC)`,
		`CREATE TABLE events (
			key        INTEGER PRIMARY KEY, -- sid<<32 | seq
			session_id TEXT    NOT NULL,
			seq        INTEGER NOT NULL,
			type       TEXT    NOT NULL,
			time       INTEGER NOT NULL,
			json       TEXT    NOT NULL
		)`,
		`CREATE TABLE snapshots (
			sid  INTEGER PRIMARY KEY,
			seq  INTEGER NOT NULL,
			data BLOB
		)`,
	},
}

// migrate brings the schema up to date in one write transaction, so that
// two processes opening a new file at once do not both create it.
func migrate(ctx context.Context, db *sql.DB) error {
	return write(ctx, db, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
			version INTEGER NOT NULL
		)`); err != nil {
			return err
		}
		var version int
		switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&version); {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (id, version) VALUES (1, 0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("database schema is version %d, newer than this build's %d", version, len(migrations))
		}
		if version == len(migrations) {
			return nil
		}
		for v := version; v < len(migrations); v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
				}
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ? WHERE id = 1`, len(migrations))
		return err
	})
}
