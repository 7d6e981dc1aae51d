package agentrt

import (
	"cmp"
	"context"
	"fmt"

	"github.com/agentrt/agentrt/session"
)

// ForkOptions say what a fork is called and how it differs.
type ForkOptions struct {
	// ID names the fork; "" for a fresh id.
	ID string
	// Model, when set, is the model the fork's conversation calls use
	// from its start instead of the agent's (a model_changed event ends
	// the fork's copy of the log): the agent must know it (its own, or
	// one of Agent.Models).
	Model string
}

// Fork makes a new session whose log is a copy of session id's up to and
// including event atSeq, with its state rebuilt from that copy; it then
// runs on its own. A fork of a waiting session keeps its pending
// requests; a fork taken in the middle of a run is a run that stopped
// there, which Resume continues. Its metadata records where it came from
// (forked_from, forked_at); o names it and may change its model. Both
// sessions are of ctx's tenant.
func (r *Runner) Fork(ctx context.Context, id string, atSeq int64, o ForkOptions) (*session.Session, error) {
	src, err := r.store.GetSession(ctx, id)
	if err != nil {
		return nil, notFound(id, err)
	}
	if atSeq < 1 || atSeq > src.LastSeq {
		return nil, &Error{Kind: FailInput, Code: CodeBadSeq,
			Msg: fmt.Sprintf("session %s has events 1 to %d: cannot fork at %d", id, src.LastSeq, atSeq)}
	}
	newID := o.ID
	if newID == "" {
		newID = r.newID()
	}
	st := NewState(newID, src.Agent)
	if a, ok := r.agents[src.Agent]; ok && a.Policy != nil {
		if err := st.AttachPolicy(a.Policy); err != nil {
			return nil, &Error{Kind: FailPolicy, Msg: "fork of session " + id, Err: err}
		}
	}
	var evs []*session.Event
	for e, err := range r.store.Events(ctx, id, 0) {
		if err != nil {
			return nil, &Error{Kind: FailStore, Msg: "read events of session " + id, Err: err}
		}
		if e.Seq > atSeq {
			break
		}
		c := *e // events are immutable: the payload is shared
		c.SessionID = newID
		if err := st.Apply(&c); err != nil {
			return nil, &Error{Kind: FailStore, Msg: "replay session " + id, Err: err}
		}
		evs = append(evs, &c)
	}
	if o.Model != "" && o.Model != st.Model {
		a, err := r.agent(src.Agent)
		if err != nil {
			return nil, err
		}
		if _, err := a.modelNamed(o.Model); err != nil {
			return nil, err
		}
		last := evs[len(evs)-1]
		ev := &session.Event{V: session.SchemaVersion, SessionID: newID, Seq: last.Seq + 1, Agent: last.Agent, Turn: last.Turn, RunID: last.RunID, Time: r.now(),
			Type: session.TypeModelChanged, Data: &session.ModelChanged{Model: o.Model, Was: cmp.Or(st.Model, a.Model.Name())}}
		if err := st.Apply(ev); err != nil {
			return nil, &Error{Kind: FailInternal, Msg: "change the model of fork " + newID, Err: err}
		}
		evs = append(evs, ev)
	}
	meta := map[string]string{"forked_from": id, "forked_at": fmt.Sprint(atSeq)}
	for k, v := range src.Metadata {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	}
	now := r.now()
	s := &session.Session{ID: newID, Agent: src.Agent, Status: session.StatusIdle, Metadata: meta, CreatedAt: now, UpdatedAt: now}
	if err := r.store.CreateSession(ctx, s); err != nil {
		return nil, &Error{Kind: FailInput, Code: CodeSessionExists, Msg: fmt.Sprintf("cannot create the fork %q", newID), Err: err}
	}
	c := &session.Commit{SessionID: newID, Events: evs, Status: st.Status, Turn: st.Turn, Usage: st.Usage, Time: now}
	if err := r.store.Commit(ctx, c); err != nil {
		_ = r.store.DeleteSession(context.WithoutCancel(ctx), newID)
		return nil, storeError(newID, err)
	}
	return r.store.GetSession(ctx, newID)
}
