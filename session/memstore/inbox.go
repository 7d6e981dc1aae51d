package memstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentrt/agentrt/session"
)

// inbox is the store's session.Inbox: every input, by tenant and id, and
// each source's in order. The Store's mu guards it.
type inbox struct {
	seq     int64
	inputs  map[key]*session.InboxInput   // by tenant and input id
	sources map[key][]*session.InboxInput // by tenant and source, in Seq order
	// pending are each source's pending inputs, in Seq order: what the
	// gateway looks through, without the sources' whole history.
	pending map[key][]*session.InboxInput
}

// settle takes in out of its source's pending inputs.
func (b *inbox) settle(in *session.InboxInput) {
	k := key{in.Tenant, in.Source}
	p := slices.DeleteFunc(b.pending[k], func(x *session.InboxInput) bool { return x == in })
	if len(p) == 0 {
		delete(b.pending, k)
		return
	}
	b.pending[k] = p
}

// answerable reports whether every input of ids is pending (ErrConflict
// names one that is not).
func (b *inbox) answerable(tenant string, ids []string) error {
	for _, id := range ids {
		in := b.inputs[key{tenant, id}]
		switch {
		case in == nil:
			return fmt.Errorf("input %q is not in the inbox: %w", id, session.ErrConflict)
		case in.State != session.InputPending:
			return fmt.Errorf("input %q is %s, not pending: %w", id, in.State, session.ErrConflict)
		}
	}
	return nil
}

// answer marks the inputs of ids answered by runID.
func (b *inbox) answer(tenant string, ids []string, runID string) {
	for _, id := range ids {
		in := b.inputs[key{tenant, id}]
		in.State, in.RunID = session.InputAnswered, runID
		b.settle(in)
	}
}

// copyInput returns a copy of in that shares no memory with it: its
// parts' data included, which the caller may change in place.
func copyInput(in *session.InboxInput) session.InboxInput {
	c := *in
	c.Parts = slices.Clone(in.Parts)
	for i := range c.Parts {
		c.Parts[i].Data = bytes.Clone(c.Parts[i].Data)
	}
	c.Metadata = maps.Clone(in.Metadata)
	return c
}

// compactData makes in's data parts compact, as the other stores keep
// them (see session.InputPart); in's parts are the store's own.
func compactData(in *session.InboxInput) error {
	for i, p := range in.Parts {
		if p.Type != "data" {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, p.Data); err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
		in.Parts[i].Data = buf.Bytes()
	}
	return nil
}

var _ session.BoundedInbox = (*Store)(nil)

// Submit stores in. See session.Inbox.
func (st *Store) Submit(ctx context.Context, in *session.InboxInput) (session.InboxInput, bool, error) {
	return st.SubmitWithin(ctx, in, session.Bounds{})
}

// SubmitWithin stores in if its source has room. See
// session.BoundedInbox.
func (st *Store) SubmitWithin(ctx context.Context, in *session.InboxInput, bounds session.Bounds) (session.InboxInput, bool, error) {
	if err := ctx.Err(); err != nil {
		return session.InboxInput{}, false, err
	}
	tenant := session.TenantOf(ctx)
	if err := in.Check(tenant); err != nil {
		return session.InboxInput{}, false, fmt.Errorf("memstore: submit: %w", err)
	}
	// Copied, and its data compacted, before the lock: the caller may
	// change in once Submit returns.
	stored := copyInput(in)
	if err := compactData(&stored); err != nil {
		return session.InboxInput{}, false, fmt.Errorf("memstore: submit input %q: %w", in.ID, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	b := &st.inbox
	if b.inputs == nil {
		b.inputs, b.sources = make(map[key]*session.InboxInput), make(map[key][]*session.InboxInput)
	}
	sk := key{tenant, in.Source}
	if in.Key != "" {
		for _, old := range b.sources[sk] {
			if old.Key != in.Key {
				continue
			}
			if old.Digest != in.Digest {
				return session.InboxInput{}, false, fmt.Errorf("memstore: submit to source %q: key %q was given to another input (%s): %w",
					in.Source, in.Key, old.ID, session.ErrConflict)
			}
			return copyInput(old), true, nil
		}
	}
	if _, dup := b.inputs[key{tenant, in.ID}]; dup {
		return session.InboxInput{}, false, fmt.Errorf("memstore: submit: input %q exists: %w", in.ID, session.ErrExists)
	}
	if bounds != (session.Bounds{}) {
		var size int64
		for _, p := range b.pending[sk] {
			size += int64(p.Size())
		}
		if n := len(b.pending[sk]); !bounds.Fits(n, size, int64(stored.Size())) {
			return session.InboxInput{}, false, fmt.Errorf("memstore: submit input %q: %w", in.ID,
				&session.FullError{Bounds: bounds, Pending: n, Bytes: size})
		}
	}
	b.seq++
	stored.Tenant, stored.Seq, stored.State, stored.At = tenant, b.seq, session.InputPending, st.now().UTC()
	stored.RunID, stored.Reason = "", ""
	p := &stored
	b.inputs[key{tenant, in.ID}] = p
	b.sources[sk] = append(b.sources[sk], p)
	if b.pending == nil {
		b.pending = make(map[key][]*session.InboxInput)
	}
	b.pending[sk] = append(b.pending[sk], p)
	return copyInput(p), false, nil
}

// PendingSources lists the sources with pending inputs. See session.Inbox.
func (st *Store) PendingSources(ctx context.Context, limit int) ([]session.SourceState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	type source struct {
		session.SourceState
		firstSeq int64 // of its oldest pending input: the sources' order
	}
	all := make([]source, 0, len(st.inbox.pending))
	for sk, ins := range st.inbox.pending {
		var s *source
		for _, in := range ins {
			if s == nil {
				s = &source{session.SourceState{Tenant: sk.tenant, Source: sk.id, First: in.At}, in.Seq}
			}
			s.Pending++
			s.Bytes += int64(in.Size())
			s.Last, s.Version, s.SessionID = in.At, in.Seq, in.SessionID
		}
		if s != nil {
			all = append(all, *s)
		}
	}
	slices.SortFunc(all, func(a, b source) int { return cmp.Compare(a.firstSeq, b.firstSeq) })
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	out := make([]session.SourceState, len(all))
	for i, s := range all {
		out[i] = s.SourceState
	}
	return out, nil
}

// PendingOf summarises the source's pending inputs. See session.Inbox.
func (st *Store) PendingOf(ctx context.Context, source string) (session.SourceState, error) {
	if err := ctx.Err(); err != nil {
		return session.SourceState{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	k := keyOf(ctx, source)
	s := session.SourceState{Tenant: k.tenant, Source: source}
	for _, in := range st.inbox.pending[k] {
		if s.Pending == 0 {
			s.First = in.At
		}
		s.Pending++
		s.Bytes += int64(in.Size())
		s.Last, s.Version, s.SessionID = in.At, in.Seq, in.SessionID
	}
	return s, nil
}

// Pending returns the source's pending inputs in order. See session.Inbox.
func (st *Store) Pending(ctx context.Context, source string, limit int) ([]session.InboxInput, error) {
	return st.inputsOf(ctx, source, 0, limit, true)
}

// Inputs returns the source's inputs after a seq. See session.Inbox.
func (st *Store) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	return st.inputsOf(ctx, source, after, limit, false)
}

func (st *Store) inputsOf(ctx context.Context, source string, after int64, limit int, pendingOnly bool) ([]session.InboxInput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []session.InboxInput
	list := st.inbox.sources[keyOf(ctx, source)]
	if pendingOnly {
		list = st.inbox.pending[keyOf(ctx, source)]
	}
	for _, in := range list {
		if in.Seq <= after || pendingOnly && in.State != session.InputPending {
			continue
		}
		out = append(out, copyInput(in))
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// Refuse marks pending inputs refused. See session.Inbox.
func (st *Store) Refuse(ctx context.Context, ids []string, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tenant := session.TenantOf(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, id := range ids {
		if in := st.inbox.inputs[key{tenant, id}]; in != nil && in.State == session.InputPending {
			in.State, in.Reason = session.InputRefused, reason
			st.inbox.settle(in)
		}
	}
	return nil
}
