package gateway_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// The edges of the watch's skip by session.Foreign (found by review):
// the tests below failed when the count was taken as seen before a read
// that then failed, and when the turn began with the count of its own
// read of the inbox.

// flakyForeignStore is a shared memstore with Foreign, whose next Inputs
// reads fail while fail > 0.
type flakyForeignStore struct {
	*memstore.Store
	n    atomic.Int64
	fail atomic.Int64
}

func (f *flakyForeignStore) Foreign() int64 { return f.n.Load() }

func (f *flakyForeignStore) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("disk I/O error (injected)")
	}
	return f.Store.Inputs(ctx, source, after, limit)
}

func inputState(store session.Inbox, source, id string) session.InputState {
	ins, _ := store.Inputs(context.Background(), source, 0, 0)
	for _, in := range ins {
		if in.ID == id {
			return in.State
		}
	}
	return ""
}

// A look whose read of the inbox fails does not take the foreign count
// as seen: a later look finds the other process's input.
func TestWatchLookFailureKeepsTheForeignWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		fs := &flakyForeignStore{Store: shared}
		server := newEnvWrapped(t, gateway.Config{Policy: gateway.Reject}, func(*memstore.Store) session.Store { return fs })
		server.store = shared
		sender := onStore(t, shared, gateway.Config{Policy: gateway.Reject})
		_, stop := server.busy(t, "slow question")
		defer stop()
		time.Sleep(gateway.DefaultPoll) // the first look
		synctest.Wait()
		late := sender.submit(t, "chat", "and another thing")
		fs.fail.Store(1) // the next read of the inbox fails once
		fs.n.Add(1)      // the store finds the other process's write
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if s := inputState(shared, "chat", late.ID); s != session.InputRefused {
			t.Errorf("the late input is %s after a foreign write and one failed look, 25 looks later; want refused (policy reject)", s)
		}
		close(server.bot.release)
		synctest.Wait()
	})
}

// windowStore holds the worker's first non-empty Pending read until the
// test lets it go, so that input can be submitted here between the
// worker's read of the inbox and its turn's start; its Foreign count
// never moves (nothing foreign is written).
type windowStore struct {
	*memstore.Store
	once   sync.Once
	inRead chan struct{}
	goOn   chan struct{}
}

func (w *windowStore) Pending(ctx context.Context, source string, limit int) ([]session.InboxInput, error) {
	ins, err := w.Store.Pending(ctx, source, limit)
	if len(ins) > 0 {
		w.once.Do(func() {
			close(w.inRead)
			<-w.goOn
		})
	}
	return ins, err
}

func (*windowStore) Foreign() int64 { return 0 }

// Input submitted in this process after the worker read the inbox and
// before its turn began met no turn to apply the policy to (Submit's
// apply): the watch's first look reads whatever the foreign count, and
// applies it.
func TestWatchFirstLookReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		ws := &windowStore{Store: shared, inRead: make(chan struct{}), goOn: make(chan struct{})}
		server := newEnvWrapped(t, gateway.Config{Policy: gateway.Reject}, func(*memstore.Store) session.Store { return ws })
		server.store = shared
		server.bot.inModel = make(chan struct{}, 8)
		server.bot.release = make(chan struct{})
		stop := server.run(t)
		defer stop()
		server.submit(t, "chat", "slow question")
		<-ws.inRead
		late := server.submit(t, "chat", "and another thing")
		close(ws.goOn)
		<-server.bot.inModel
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if s := inputState(shared, "chat", late.ID); s != session.InputRefused {
			t.Errorf("input submitted here before the turn began is %s while the turn runs; want refused (policy reject)", s)
		}
		close(server.bot.release)
		synctest.Wait()
	})
}
