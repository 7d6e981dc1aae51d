package a2a

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// List implements taskstore.Store: the tasks of one context (req.ContextID,
// a session of this agent), or of every session of this agent in the
// tenant, newest first (in the order their messages came), filtered by
// state and status time, a page at a time.
//
// The tasks are read from the store: the sessions' inputs say which
// tasks there are, and each page's tasks are derived from their logs (all
// of them when a filter needs their states). A listing across the tenant
// reads the inputs of every session of the agent, which grows with the
// tenant's sessions: give contextId where you can.
func (s *taskStore) List(ctx context.Context, req *spec.ListTasksRequest) (*spec.ListTasksResponse, error) {
	size := req.PageSize
	if size == 0 {
		size = 50
	} else if size < 1 || size > 100 {
		return nil, rpcError(spec.ErrInvalidParams, "pageSize must be between 1 and 100, got %d", size)
	}
	before := int64(-1)
	if req.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.PageToken)
		if err == nil {
			before, err = strconv.ParseInt(string(b), 10, 64)
		}
		if err != nil || before <= 0 {
			return nil, rpcError(spec.ErrInvalidParams, "pageToken %q is not a token a listing gave (its nextPageToken)", req.PageToken)
		}
	}
	found, err := s.taskInputs(ctx, req.ContextID)
	if err != nil {
		return nil, err
	}
	// Newest first: the inbox numbers inputs in the order they came.
	slices.SortFunc(found, func(a, b listed) int { return cmp.Compare(b.in.Seq, a.in.Seq) })
	from := func(seqs []int64) int { // the first of this page
		if before <= 0 {
			return 0
		}
		i := slices.IndexFunc(seqs, func(seq int64) bool { return seq < before })
		if i < 0 {
			return len(seqs)
		}
		return i
	}
	var tasks []*spec.Task
	var seqs []int64
	count := len(found) // the tasks the filters keep, on every page
	rest := 0           // those from this page on
	if req.Status == spec.TaskStateUnspecified && req.StatusTimestampAfter == nil {
		// No filter: only this page's tasks are derived.
		for _, l := range found {
			seqs = append(seqs, l.in.Seq)
		}
		i := from(seqs)
		rest = len(seqs) - i
		seqs = seqs[i:min(i+size, len(seqs))]
		found = found[i:min(i+size, len(found))]
		if tasks, err = s.deriveListed(ctx, found); err != nil {
			return nil, err
		}
	} else {
		all, err := s.deriveListed(ctx, found)
		if err != nil {
			return nil, err
		}
		for i, t := range all {
			if req.Status != spec.TaskStateUnspecified && t.Status.State != req.Status ||
				req.StatusTimestampAfter != nil && t.Status.Timestamp != nil && t.Status.Timestamp.Before(*req.StatusTimestampAfter) {
				continue
			}
			tasks, seqs = append(tasks, t), append(seqs, found[i].in.Seq)
		}
		count = len(tasks)
		i := from(seqs)
		tasks, seqs = tasks[i:], seqs[i:]
		rest = len(tasks)
	}
	resp := &spec.ListTasksResponse{Tasks: []*spec.Task{}, TotalSize: count, PageSize: size}
	for _, t := range tasks[:min(size, len(tasks))] {
		resp.Tasks = append(resp.Tasks, trimmed(t, req))
	}
	if rest > size {
		resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(seqs[size-1], 10)))
	}
	return resp, nil
}

// listed is a task found by a listing: its input and session.
type listed struct {
	in   *session.InboxInput
	sess *session.Session
}

// taskInputs finds the tasks of context id (a session of this agent;
// another is none), or with id "" of every session of this agent in ctx's
// tenant: the inputs of the sessions that are A2A tasks' (taskAfter).
func (s *taskStore) taskInputs(ctx context.Context, id string) ([]listed, error) {
	var out []listed
	add := func(sess *session.Session) error {
		ins, err := s.inbox.Inputs(ctx, sess.ID, 0, 0)
		if err != nil {
			return &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (the inputs of session " + sess.ID + ")", Err: err}
		}
		for i := range ins {
			if _, ok := taskAfter(&ins[i]); ok && ins[i].SessionID == sess.ID {
				out = append(out, listed{in: &ins[i], sess: sess})
			}
		}
		return nil
	}
	if id != "" {
		sess, err := s.sessionOf(ctx, id)
		if errors.Is(err, spec.ErrTaskNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return out, add(sess)
	}
	opt := session.ListOptions{Limit: 200}
	for {
		page, err := s.srv.Runner().Store().ListSessions(ctx, opt)
		if err != nil {
			return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (the sessions)", Err: err}
		}
		for _, sess := range page {
			if sess.Agent == s.agent {
				if err := add(sess); err != nil {
					return nil, err
				}
			}
		}
		if len(page) < opt.Limit {
			return out, nil
		}
		last := page[len(page)-1]
		opt.After, opt.AfterCreated = last.ID, last.CreatedAt
	}
}

// deriveListed returns the tasks of found, in order: held here if they
// are (and current), else derived, one read of each session's log.
func (s *taskStore) deriveListed(ctx context.Context, found []listed) ([]*spec.Task, error) {
	tenant := session.TenantOf(ctx)
	out := make([]*spec.Task, len(found))
	bySession := map[string][]int{}
	for i, l := range found {
		ref, err := refOf(l.in)
		if err != nil {
			return nil, err
		}
		if t, _, ok := s.held(ctx, ref.id(), tenant); ok {
			out[i] = t
			continue
		}
		bySession[l.sess.ID] = append(bySession[l.sess.ID], i)
	}
	for _, idx := range bySession {
		tis := make([]taskInput, len(idx))
		for j, i := range idx {
			ref, _ := refOf(found[i].in)
			tis[j] = taskInput{ref: ref, in: found[i].in}
		}
		ds, err := deriveTasks(ctx, s.srv.Runner().Store(), found[idx[0]].sess, tis)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = ds[j].task
		}
	}
	return out, nil
}

// trimmed is t as a listing shows it: its last req.HistoryLength messages
// (default 100), its artifacts only if asked for.
func trimmed(t *spec.Task, req *spec.ListTasksRequest) *spec.Task {
	c := shallow(t)
	n := 100
	if req.HistoryLength != nil {
		n = *req.HistoryLength
	}
	if n == 0 {
		c.History = []*spec.Message{}
	} else if n > 0 && len(c.History) > n {
		c.History = c.History[len(c.History)-n:]
	}
	if !req.IncludeArtifacts {
		c.Artifacts = nil
	}
	return c
}
