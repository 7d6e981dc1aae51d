package tool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestCallCtxDerivedContextsSeeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A tool that waits on a context derived from its own: the lazy
		// context must still end it at the deadline.
		waits := Must(New("waits", "waits", func(ctx context.Context, _ struct{}) (string, error) {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-child.Done()
			return "", child.Err()
		}))
		r, err := NewRegistry(WithMeta(waits, Meta{Timeout: 5 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res := r.Call(context.Background(), "waits", nil)
		if res.OK || !errors.Is(res.Err, ErrTimeout) {
			t.Fatalf("result %+v, want a timeout", res)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("returned after %v, want 5s", got)
		}
	})
}

func TestCallCtxStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		defer cancelParent()
		var c callCtx
		c.init(parent, time.Now().Add(time.Minute), CallInfo{})
		if c.Err() != nil {
			t.Fatalf("fresh: %v", c.Err())
		}
		if c.Value(ctxKey{}) != "v" {
			t.Error("values of the parent are not visible")
		}
		if d, ok := c.Deadline(); !ok || !d.Equal(time.Now().Add(time.Minute)) {
			t.Errorf("deadline %v %v", d, ok)
		}
		time.Sleep(time.Minute) // virtual time: the deadline passes
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !c.timedOut(time.Now()) {
			t.Errorf("after the deadline: %v", c.Err())
		}
		c.release()
		select {
		case <-c.Done():
		default:
			t.Error("Done after release is not closed")
		}

		var p callCtx
		p.init(parent, time.Now().Add(time.Hour), CallInfo{})
		done := p.Done()
		cancelParent()
		<-done
		if !errors.Is(p.Err(), context.Canceled) || p.timedOut(time.Now()) {
			t.Errorf("parent canceled: err %v timedOut %v", p.Err(), p.timedOut(time.Now()))
		}
		p.release()

		var q callCtx
		q.init(context.Background(), time.Now().Add(time.Hour), CallInfo{})
		q.release()
		if !errors.Is(q.Err(), context.Canceled) {
			t.Errorf("released without Done: %v", q.Err())
		}
	})
}

type ctxKey struct{}
