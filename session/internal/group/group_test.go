package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func waitQueued[T any](t *testing.T, g *Group[T], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q := g.Queued(); q != n; q = g.Queued() {
		if time.Now().After(deadline) {
			t.Fatalf("%d queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond) // polling a condition, not a delay
	}
}

// Writes that wait together are flushed in batches of at most max, in
// the order they came, and each caller gets its own write's outcome.
func TestBatches(t *testing.T) {
	var mu sync.Mutex
	var batches [][]int
	g := New(2, 1, func(ops []*Op[int]) {
		var b []int
		for _, op := range ops {
			b = append(b, op.W)
			if op.W%2 == 1 {
				op.Answer(fmt.Errorf("odd %d", op.W))
			} else {
				op.Answer(nil)
			}
		}
		mu.Lock()
		batches = append(batches, b)
		mu.Unlock()
	})
	release := g.Hold()
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range 5 {
		waitQueued(t, g, i) // one at a time, so the order is known
		wg.Go(func() { errs[i] = g.Do(context.Background(), i) })
	}
	waitQueued(t, g, 5)
	release()
	wg.Wait()
	if got, want := fmt.Sprint(batches), "[[0 1] [2 3] [4]]"; got != want {
		t.Errorf("batches %s, want %s", got, want)
	}
	for i, err := range errs {
		if (i%2 == 1) != (err != nil) {
			t.Errorf("write %d: %v", i, err)
		}
	}
}

// A write whose context ends in the queue leaves it and is never flushed;
// one whose context has ended already is not queued.
func TestCanceledInQueue(t *testing.T) {
	var flushed []int
	g := New(8, 1, func(ops []*Op[int]) {
		for _, op := range ops {
			flushed = append(flushed, op.W)
			op.Answer(nil)
		}
	})
	release := g.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Do(ctx, 1) }()
	waitQueued(t, g, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled write: %v", err)
	}
	if err := g.Do(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with an ended context: %v", err)
	}
	release()
	if err := g.Do(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(flushed) != "[3]" {
		t.Errorf("flushed %v, want [3]", flushed)
	}
}
