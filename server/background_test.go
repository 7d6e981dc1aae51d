package server_test

import (
	"context"
	"testing"
	"time"
)

// Shutdown cancels the context of the work Go runs and waits for it to
// return; once Shutdown has begun, Go runs nothing.
func TestGoJoinedByShutdown(t *testing.T) {
	f := newFixture(t, options{})
	started, returned := make(chan struct{}), make(chan struct{})
	if !f.srv.Go(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(returned)
	}) {
		t.Fatal("Go refused before Shutdown")
	}
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	default:
		t.Fatal("Shutdown returned before the work Go ran had")
	}
	if f.srv.Go(func(context.Context) { t.Error("ran after Shutdown") }) {
		t.Error("Go ran work after Shutdown began")
	}
}
