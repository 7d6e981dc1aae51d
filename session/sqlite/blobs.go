package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/session"
)

// PutBlob keeps data once. See session.Blobs.
func (st *Store) PutBlob(ctx context.Context, data []byte, typ string) (session.Blob, error) {
	b, err := session.NewBlob(data, typ)
	if err != nil {
		return session.Blob{}, fmt.Errorf("sqlite: put blob: %w", err)
	}
	tenant := session.TenantOf(ctx)
	err = st.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.exec(sInsertBlob, tenant, b.Hash, b.Type, b.Size, st.now().UnixMicro(), data); err != nil {
			return err
		}
		var at int64
		if err := tx.queryRow(sBlobOf, []any{tenant, b.Hash}, &b.Type, &b.Size, &at); err != nil {
			return err
		}
		b.At = time.UnixMicro(at).UTC()
		return nil
	})
	if err != nil {
		return session.Blob{}, fmt.Errorf("sqlite: put blob: %w", err)
	}
	return b, nil
}

// GetBlob returns a blob and its bytes. See session.Blobs.
func (st *Store) GetBlob(ctx context.Context, hash string) (session.Blob, []byte, error) {
	b := session.Blob{Hash: hash}
	var at int64
	var data []byte
	err := st.queryRow(ctx, `SELECT type, size, at, data FROM blobs WHERE tenant = ? AND hash = ?`, session.TenantOf(ctx), hash).
		Scan(&b.Type, &b.Size, &at, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return session.Blob{}, nil, fmt.Errorf("sqlite: blob %s: %w", hash, session.ErrBlobNotFound)
	case err != nil:
		return session.Blob{}, nil, fmt.Errorf("sqlite: blob %s: %w", hash, err)
	}
	b.At = time.UnixMicro(at).UTC()
	return b, data, nil
}
