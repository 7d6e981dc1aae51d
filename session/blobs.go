package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"time"
)

// Blob describes bytes a store keeps once, by their content: an image or
// a file a person sent, which events reference by Hash rather than hold.
type Blob struct {
	// Hash is the SHA-256 of the bytes, in hex: the blob's name.
	Hash string `json:"hash"`
	// Type is the media type (image/png, application/pdf).
	Type string    `json:"type"`
	Size int64     `json:"size"`
	At   time.Time `json:"at,omitzero"`
}

// Blobs is the optional capability of a store that keeps blobs, per
// tenant (ctx's): a blob put twice is kept once.
type Blobs interface {
	// PutBlob keeps data, of media type typ, and returns its Blob; data
	// the tenant keeps already is not written again (its first type and
	// time stay). An empty data or a type that is not a media type is an
	// error.
	PutBlob(ctx context.Context, data []byte, typ string) (Blob, error)
	// GetBlob returns the blob of hash and its bytes; ErrNotFound when
	// the tenant keeps none.
	GetBlob(ctx context.Context, hash string) (Blob, []byte, error)
}

// ErrBlobNotFound is GetBlob's error for a blob the tenant does not keep
// (it wraps ErrNotFound).
var ErrBlobNotFound = fmt.Errorf("blob: %w", ErrNotFound)

// NewBlob describes data of media type typ (Hash, Type, Size), checking
// what PutBlob refuses.
func NewBlob(data []byte, typ string) (Blob, error) {
	if len(data) == 0 {
		return Blob{}, errors.New("a blob needs bytes")
	}
	mt, _, err := mime.ParseMediaType(typ)
	if err != nil {
		return Blob{}, fmt.Errorf("blob type %q: %w", typ, err)
	}
	sum := sha256.Sum256(data)
	return Blob{Hash: hex.EncodeToString(sum[:]), Type: mt, Size: int64(len(data))}, nil
}

// CheckBlobHash reports whether hash can name a blob: 64 hex digits.
func CheckBlobHash(hash string) error {
	if len(hash) != 64 {
		return fmt.Errorf("blob hash %q: want 64 hex digits (SHA-256)", hash)
	}
	if _, err := hex.DecodeString(hash); err != nil {
		return fmt.Errorf("blob hash %q: want 64 hex digits (SHA-256)", hash)
	}
	return nil
}
