package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/session"
)

// putBlobSQL keeps a blob unless the tenant keeps it, and returns what
// is kept: the new row, or the one there was.
const putBlobSQL = `WITH i AS (
	INSERT INTO blobs (tenant, hash, type, size, at, data) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (tenant, hash) DO NOTHING RETURNING type, size, at
)
SELECT type, size, at FROM i
UNION ALL
SELECT type, size, at FROM blobs WHERE tenant = $1 AND hash = $2 AND NOT EXISTS (SELECT 1 FROM i)`

// PutBlob keeps data once. See session.Blobs.
func (st *Store) PutBlob(ctx context.Context, data []byte, typ string) (session.Blob, error) {
	b, err := session.NewBlob(data, typ)
	if err != nil {
		return session.Blob{}, fmt.Errorf("postgres: put blob: %w", err)
	}
	var at int64
	if err := st.pool.QueryRow(ctx, putBlobSQL, session.TenantOf(ctx), b.Hash, b.Type, b.Size, st.now().UnixMicro(), data).Scan(&b.Type, &b.Size, &at); err != nil {
		return session.Blob{}, fmt.Errorf("postgres: put blob: %w", err)
	}
	b.At = time.UnixMicro(at).UTC()
	return b, nil
}

// GetBlob returns a blob and its bytes. See session.Blobs.
func (st *Store) GetBlob(ctx context.Context, hash string) (session.Blob, []byte, error) {
	b := session.Blob{Hash: hash}
	var at int64
	var data []byte
	err := st.pool.QueryRow(ctx, `SELECT type, size, at, data FROM blobs WHERE tenant = $1 AND hash = $2`, session.TenantOf(ctx), hash).
		Scan(&b.Type, &b.Size, &at, &data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return session.Blob{}, nil, fmt.Errorf("postgres: blob %s: %w", hash, session.ErrBlobNotFound)
	case err != nil:
		return session.Blob{}, nil, fmt.Errorf("postgres: blob %s: %w", hash, err)
	}
	b.At = time.UnixMicro(at).UTC()
	return b, data, nil
}
