package server

import (
	"context"
	"sync"
)

// Go runs f on a goroutine of its own that Shutdown waits for, as it
// waits for the streams: work an adapter does beside its requests (the
// A2A adapter's push notifications). f's context is canceled when
// Shutdown begins, and f should return soon after, having handed over
// what it held. Go reports false, running nothing, once Shutdown has
// begun.
func (s *Server) Go(f func(ctx context.Context)) bool {
	if !s.openStream() {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	})
	go func() {
		defer s.streams.Done()
		defer wg.Wait()
		defer cancel()
		f(ctx)
	}()
	return true
}
