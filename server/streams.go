package server

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/agentrt/agentrt"
)

// A stream holds what a request does not: a connection for as long as
// the client stays, goroutines, a watch of the store, and a buffer of up
// to ClientBuffer events. One key may hold at most so many at once
// (Key.MaxStreams, else Config.MaxStreams); without keys, the clients on
// this machine share one such allowance. What counts as one:
//
//   - a request of a route that may stream (Route.Stream), while it runs:
//     an SSE stream of a turn or of a session's log, a WebSocket
//     connection, and every request of an adapter's streaming route (a
//     turn it follows, whether it answers with a stream or with the
//     turn's result). A native route that says which requests stream
//     (Route.streams) counts those only;
//   - each subscription a WebSocket connection carries.
//
// One over is refused, 429 too_many_streams, before anything is done.

// streamBudget counts the streams of a key (or of the keyless clients).
type streamBudget struct {
	open atomic.Int64
	max  int64
}

type budgetKey struct{}

// withBudget scopes a request to the allowance of its key.
func withBudget(ctx context.Context, b *streamBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// takeStream counts a stream against the allowance of ctx's key, or
// refuses it; the stream's end is the budget's release, called once. A
// context of no key (a request that was not authenticated: a public
// route) has no allowance (a nil budget, whose release does nothing).
func takeStream(ctx context.Context) (*streamBudget, error) {
	b, _ := ctx.Value(budgetKey{}).(*streamBudget)
	if b == nil {
		return nil, nil
	}
	if n := b.open.Add(1); n > b.max {
		b.open.Add(-1)
		return nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeTooManyStreams,
			Msg: fmt.Sprintf("the API key has %d streams open, the most it may (server.max_streams, or the key's max_streams): close one first", b.max)}
	}
	return b, nil
}

// release gives back a stream takeStream counted.
func (b *streamBudget) release() {
	if b != nil {
		b.open.Add(-1)
	}
}

// limitStreams counts a request of a route that may stream against its
// key's allowance while it runs (only those that ask for a stream, when
// the route says which do).
func (s *Server) limitStreams(rt Route, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if rt.streams != nil && !rt.streams(r) {
			h(w, r)
			return
		}
		b, err := takeStream(r.Context())
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		defer b.release()
		h(w, r)
	}
}
