package session

import (
	"context"
	"encoding/json"
)

// Record is a small JSON document a store keeps with a session, outside
// its log: what an adapter keeps about a session that is no event of its
// runs — an A2A task's push-notification configs, and where their
// delivery stands. Records go with their session (DeleteSession), and
// are read and written by every process on the store.
//
// (Tenant, SessionID, Kind, Key, ID) names a record. Kind says what it
// is, namespaced by its owner ("a2a.push"); Key what it is about within
// the session (a task's id); ID which of those it is (a config's id; ""
// when there is one).
type Record struct {
	Tenant    string          `json:"tenant"`
	SessionID string          `json:"session_id"`
	Kind      string          `json:"kind"`
	Key       string          `json:"key"`
	ID        string          `json:"id"`
	Data      json.RawMessage `json:"data"`
	// Version counts the record's writes: 1 once created, one more each
	// time it is replaced. PutRecord reads it as the version the writer
	// read (see Records).
	Version int64 `json:"version"`
}

// Records is the optional store capability of records kept with
// sessions (see Record), written with optimistic concurrency: a writer
// that read a record at version v replaces it only if it is still at v,
// so that two processes updating one record do not lose a write. Every
// method is scoped by ctx's tenant but KindRecords, which lists every
// tenant's (for a process that looks after all of them).
type Records interface {
	// PutRecord writes r (its Tenant is ctx's) and returns its new
	// version. With r.Version 0 it creates the record, and fails with
	// ErrExists if there is one; with r.Version > 0 it replaces the record
	// at that version, and fails with ErrConflict if the record is at
	// another (or ErrNotFound if there is none); with r.Version < 0 it
	// creates or replaces, whatever the version. Data must be JSON. It
	// fails with ErrNotFound for an unknown session.
	PutRecord(ctx context.Context, r *Record) (version int64, err error)
	// SessionRecords returns the records of session id of kind, of key
	// (all keys when key is ""), ordered by key, then ID.
	SessionRecords(ctx context.Context, id, kind, key string) ([]Record, error)
	// DeleteRecord removes a record; ErrNotFound if there is none.
	DeleteRecord(ctx context.Context, id, kind, key, recordID string) error
	// KindRecords returns the records of kind of every tenant, ordered by
	// tenant, session, key and ID, at most limit (zero or less: all).
	KindRecords(ctx context.Context, kind string, limit int) ([]Record, error)
}
