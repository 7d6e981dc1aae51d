package memstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/session"
)

// blob is a kept blob and its bytes.
type blob struct {
	session.Blob
	data []byte
}

// PutBlob keeps data once. See session.Blobs.
func (st *Store) PutBlob(ctx context.Context, data []byte, typ string) (session.Blob, error) {
	if err := ctx.Err(); err != nil {
		return session.Blob{}, err
	}
	b, err := session.NewBlob(data, typ)
	if err != nil {
		return session.Blob{}, fmt.Errorf("memstore: put blob: %w", err)
	}
	k := key{session.TenantOf(ctx), b.Hash}
	st.mu.Lock()
	defer st.mu.Unlock()
	if have, ok := st.blobs[k]; ok {
		return have.Blob, nil
	}
	if st.blobs == nil {
		st.blobs = map[key]*blob{}
	}
	b.At = st.now().UTC().Truncate(time.Microsecond)
	st.blobs[k] = &blob{b, bytes.Clone(data)}
	return b, nil
}

// GetBlob returns a blob and its bytes. See session.Blobs.
func (st *Store) GetBlob(ctx context.Context, hash string) (session.Blob, []byte, error) {
	if err := ctx.Err(); err != nil {
		return session.Blob{}, nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	b, ok := st.blobs[key{session.TenantOf(ctx), hash}]
	if !ok {
		return session.Blob{}, nil, fmt.Errorf("memstore: blob %s: %w", hash, session.ErrBlobNotFound)
	}
	return b.Blob, bytes.Clone(b.data), nil
}
