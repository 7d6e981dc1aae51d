package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
)

// runBlobs checks session.Blobs: a blob is kept once per tenant, by its
// SHA-256, byte for byte; its time is the store's clock, to the
// microsecond.
func runBlobs(t *testing.T, newStore Factory) {
	t.Parallel()
	clock := NewClock(base)
	s := newStore(t, clock.Now)
	bs, ok := s.(session.Blobs)
	if !ok {
		t.Skip("the store does not implement session.Blobs")
	}
	ctx := t.Context()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 255}, 300_000)...) // 1.2 MB, every byte value kind
	b, err := bs.PutBlob(ctx, png, "image/png")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := session.NewBlob(png, "image/png")
	want.At = base
	if b != want {
		t.Errorf("PutBlob: %+v, want %+v", b, want)
	}
	clock.Advance(time.Minute)
	again, err := bs.PutBlob(ctx, png, "application/octet-stream")
	if err != nil || again != want {
		t.Errorf("PutBlob again: %+v %v, want the first (%+v)", again, err, want)
	}
	got, data, err := bs.GetBlob(ctx, b.Hash)
	if err != nil || got != want || !bytes.Equal(data, png) {
		t.Fatalf("GetBlob: %+v, %d bytes, %v", got, len(data), err)
	}
	data[0] = 'X'
	if _, data2, _ := bs.GetBlob(ctx, b.Hash); data2[0] != png[0] {
		t.Error("changing what GetBlob returned changed the blob")
	}
	// Bad input.
	if _, err := bs.PutBlob(ctx, nil, "image/png"); err == nil {
		t.Error("an empty blob was kept")
	}
	if _, err := bs.PutBlob(ctx, []byte("x"), "not a type;;"); err == nil {
		t.Error("a blob of no media type was kept")
	}
	// Another tenant keeps its own.
	acme := session.WithTenant(ctx, "acme")
	if _, _, err := bs.GetBlob(acme, b.Hash); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("another tenant's blob: %v, want ErrNotFound", err)
	}
	if _, _, err := bs.GetBlob(ctx, want.Hash[:63]+"0"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("no such blob: %v, want ErrNotFound", err)
	}
	pdf, err := bs.PutBlob(acme, []byte("%PDF-1.7\n…"), "application/pdf; charset=binary")
	if err != nil || pdf.Type != "application/pdf" {
		t.Errorf("a PDF of acme: %+v %v", pdf, err)
	}
}
