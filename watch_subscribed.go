package agentrt

import (
	"context"
	"iter"

	"github.com/agentrt/agentrt/session"
)

// subscribedKey carries WatchSubscribed's callback to watch.
type subscribedKey struct{}

// WatchSubscribed is Watch that calls subscribed once it sees the
// session's live tokens, before it yields anything: a caller that starts
// a turn after subscribed misses none of the turn's tokens (Watch alone
// may subscribe after the first ones went by). subscribed is not called
// when the watch fails first (an unknown session).
func (r *Runner) WatchSubscribed(ctx context.Context, sessionID string, after int64, subscribed func()) iter.Seq2[*session.Event, error] {
	return r.watch(context.WithValue(ctx, subscribedKey{}, subscribed), sessionID, after, nil)
}
