package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

// FollowStore is a store with Follow.
type FollowStore interface {
	session.Store
	session.Follower
}

// FollowAcross checks Follow across processes: a and b are two stores on
// one database (two processes). Commits to one session come from either,
// at random, one to four events each; followers on both join at random
// seqs while they come, some leaving early. Every follower sees each seq
// after its start once, in order, with no gap, the same events as the
// log holds — those its own store committed (handed without a read) and
// the other's (found by its store) alike.
func FollowAcross(t *testing.T, a, b FollowStore, seeds int) {
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			followAcross(t, a, b, seed)
		})
	}
}

func followAcross(t *testing.T, a, b FollowStore, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	ctx := t.Context()
	id := fmt.Sprintf("across-%d-%d", seed, time.Now().UnixNano())
	if err := a.CreateSession(ctx, &session.Session{ID: id, Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	stores := []FollowStore{a, b}
	var (
		last   int64
		target atomic.Int64
		wg     sync.WaitGroup
	)
	target.Store(1 << 62)
	type result struct {
		from  int64
		store int
		leave int
		got   []int64
		text  []string
	}
	var results []*result
	fctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		wg.Wait()
	}()
	start := func() {
		res := &result{from: r.Int64N(last + 1), store: r.IntN(2)}
		if r.IntN(4) == 0 {
			res.leave = 1 + r.IntN(8)
		}
		results = append(results, res)
		f := stores[res.store]
		wg.Go(func() {
			for ev, err := range f.Follow(fctx, id, res.from) {
				if err != nil {
					if fctx.Err() == nil {
						t.Errorf("follower from %d on store %d: %v", res.from, res.store, err)
					}
					return
				}
				res.got = append(res.got, ev.Seq)
				if d, ok := ev.Data.(*session.Final); ok {
					res.text = append(res.text, d.Text)
				}
				if res.leave > 0 && len(res.got) >= res.leave || ev.Seq >= target.Load() {
					return
				}
			}
		})
	}
	commit := func(s FollowStore, n int) {
		evs := make([]*session.Event, n)
		for i := range evs {
			seq := last + int64(i) + 1
			evs[i] = &session.Event{V: 1, Seq: seq, SessionID: id, Type: session.TypeFinal,
				Time: time.Now().UTC().Truncate(time.Microsecond), Data: &session.Final{Text: fmt.Sprint("e", seq)}}
		}
		if err := s.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: last, Events: evs, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		last += int64(n)
	}
	start()
	for range 40 {
		if r.IntN(4) == 0 {
			start()
		}
		commit(stores[r.IntN(2)], 1+r.IntN(4))
	}
	// The last commit from each store: every follower that stays ends
	// with the second.
	commit(a, 1)
	target.Store(last + 1)
	commit(b, 1)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("followers did not reach seq %d in a minute", last)
	}
	for i, res := range results {
		var want []int64
		var text []string
		for s := res.from + 1; s <= last; s++ {
			want = append(want, s)
			text = append(text, fmt.Sprint("e", s))
		}
		if res.leave > 0 && len(want) > res.leave {
			want, text = want[:res.leave], text[:res.leave]
		}
		if diff := cmp.Diff(want, res.got); diff != "" {
			t.Fatalf("follower %d on store %d from %d: seqs (-want +got):\n%s", i, res.store, res.from, diff)
		}
		if diff := cmp.Diff(text, res.text); diff != "" {
			t.Fatalf("follower %d on store %d from %d: events (-want +got):\n%s", i, res.store, res.from, diff)
		}
	}
}
