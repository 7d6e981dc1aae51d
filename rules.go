package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/session"
)

// Always makes an approval's decision stand for later calls (a Resolution
// field): Scope "session" (the default) for this session, "agent" for
// every session of the agent; Match "tool" (the default) for every call
// of the tool, "arguments" for calls with these exact arguments.
type Always struct {
	Scope string
	Match string
}

// rulesSession is the id of the session whose log holds an agent's
// standing decisions (of a tenant): rule_added and rule_revoked events.
func rulesSession(agent string) string { return rulesPrefix + agent }

// newRule makes the standing decision res.Always asks for, about the call
// of request q.
func (x *Exec) newRule(q *HumanRequest, res Resolution, decision string) (*session.Rule, error) {
	bad := func(format string, args ...any) (*session.Rule, error) {
		return nil, &Error{Kind: FailInput, Code: CodeBadRule, Msg: fmt.Sprintf(format, args...)}
	}
	call := x.st.call(q.CallID)
	switch {
	case q.Kind != session.RequestApproval || call == nil:
		return bad("only an approval of one call can stand for later calls")
	case q.Hook:
		// A rule decides the approval policy's question, not a hook's.
		return bad("a hook's question cannot stand for later calls: the hook asks again each time")
	case decision == session.DecisionEdit:
		return bad("an edited call cannot stand for later calls: approve or reject")
	}
	a := res.Always
	r := &session.Rule{ID: "rule_" + x.r.newID(), Scope: a.Scope, Tool: call.Call.Name, Decision: decision,
		By: res.By, Reason: res.Reason, Time: x.now(), Session: x.st.SessionID}
	switch a.Scope {
	case "", session.RuleSession:
		r.Scope = session.RuleSession
	case session.RuleAgent:
		r.Agent = x.agent.Name
	default:
		return bad("scope %q is not session or agent", a.Scope)
	}
	switch a.Match {
	case "", "tool":
	case "arguments":
		r.Arguments = append([]byte(nil), call.Call.Arguments...)
	default:
		return bad("match %q is not tool or arguments", a.Match)
	}
	return r, nil
}

// addAgentRule appends r to its agent's rule log, creating the log on
// first use.
func (r *Runner) addAgentRule(ctx context.Context, rule *session.Rule) error {
	return r.writeRules(ctx, rule.Agent, &session.RuleAdded{Rule: *rule})
}

// writeRules appends one event to agent's rule log, under its lease.
func (r *Runner) writeRules(ctx context.Context, agent string, d session.Data) error {
	id := rulesSession(agent)
	if _, err := r.store.GetSession(ctx, id); errors.Is(err, session.ErrNotFound) {
		now := r.now()
		err := r.store.CreateSession(ctx, &session.Session{ID: id, Agent: agent, Status: session.StatusIdle,
			Metadata: map[string]string{"kind": "rules"}, CreatedAt: now, UpdatedAt: now})
		if err != nil && !errors.Is(err, session.ErrExists) {
			return &Error{Kind: FailStore, Msg: "create the rule log of agent " + agent, Err: err}
		}
	}
	a, err := r.agent(agent)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, resolveWait)
	defer cancel()
	lease, err := r.acquireLease(wctx, id, true, nil)
	if err != nil {
		return err
	}
	defer lease.stop()
	sess, err := r.store.GetSession(ctx, id)
	if err != nil {
		return notFound(id, err)
	}
	x := r.newExec(a, &State{SessionID: id, Agent: agent, Seq: sess.LastSeq, SnapshotSeq: sess.LastSeq})
	defer r.putExec(x)
	x.lease, x.fence = lease, lease.token()
	x.Emit(d)
	return x.Commit(ctx)
}

// agentRules folds agent's rule log into its standing decisions.
func (r *Runner) agentRules(ctx context.Context, agent string) ([]session.Rule, error) {
	var rules []session.Rule
	for e, err := range r.store.Events(ctx, rulesSession(agent), 0) {
		if errors.Is(err, session.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, &Error{Kind: FailStore, Msg: "read the rules of agent " + agent, Err: err}
		}
		switch d := e.Data.(type) {
		case *session.RuleAdded:
			rules = append(rules, d.Rule)
		case *session.RuleRevoked:
			rules = slices.DeleteFunc(rules, func(x session.Rule) bool { return x.ID == d.RuleID })
		}
	}
	return rules, nil
}

// Rules returns the standing decisions in force for session id: its own
// and its agent's (of ctx's tenant).
func (r *Runner) Rules(ctx context.Context, id string) ([]session.Rule, error) {
	st, err := r.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	agentRules, err := r.agentRules(ctx, st.Agent)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(st.Rules), agentRules...), nil
}

// AgentRules returns the standing decisions of the named agent (of ctx's
// tenant).
func (r *Runner) AgentRules(ctx context.Context, agent string) ([]session.Rule, error) {
	if _, err := r.agent(agent); err != nil {
		return nil, err
	}
	return r.agentRules(ctx, agent)
}

// RevokeRule ends a standing decision: one of session id's, or, when it is
// its agent's, in the agent's rule log. The revocation is an event, with
// who and why, like the decision.
func (r *Runner) RevokeRule(ctx context.Context, id, ruleID, by, reason string) error {
	x, err := r.beginShort(ctx, id, "", nil)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(x.st.Rules, func(rr session.Rule) bool { return rr.ID == ruleID }) {
		defer r.finish(x)
		emit(x, session.RuleRevoked{RuleID: ruleID, By: by, Reason: reason})
		return x.Commit(ctx)
	}
	agent := x.st.Agent
	r.finish(x)
	rules, err := r.agentRules(ctx, agent)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(rules, func(rr session.Rule) bool { return rr.ID == ruleID }) {
		return &Error{Kind: FailInput, Code: CodeUnknownRule, Msg: fmt.Sprintf("session %s and agent %s have no standing decision %q", id, agent, ruleID)}
	}
	return r.writeRules(ctx, agent, &session.RuleRevoked{RuleID: ruleID, By: by, Reason: reason})
}

// RevokeAgentRule ends one of the named agent's standing decisions (of
// ctx's tenant), without naming a session.
func (r *Runner) RevokeAgentRule(ctx context.Context, agent, ruleID, by, reason string) error {
	rules, err := r.AgentRules(ctx, agent)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(rules, func(rr session.Rule) bool { return rr.ID == ruleID }) {
		return &Error{Kind: FailInput, Code: CodeUnknownRule, Msg: fmt.Sprintf("agent %s has no standing decision %q", agent, ruleID)}
	}
	return r.writeRules(ctx, agent, &session.RuleRevoked{RuleID: ruleID, By: by, Reason: reason})
}
