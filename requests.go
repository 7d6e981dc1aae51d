package agentrt

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/session"
)

// MaxRequestPage is the most pending requests PendingRequests returns at
// once.
const MaxRequestPage = 500

// PendingRequests returns a page of the requests for people still
// pending in the sessions of ctx's tenant — approvals, confirmations,
// prompts, selections — oldest first, after opt.After (the Cursor of the
// last request of the page before), at most opt.Limit (zero: 50), those
// of opt.SessionID, opt.Agent and opt.Kind when they are set: a person's
// inbox, across sessions, read from the store's index of them without
// reading any log. A page shorter than its limit is the last.
//
// A sub-agent's request is pending in its own session and, standing for
// it, in its parent's (Request.Child names it); answering the parent's
// answers both.
//
// The store must keep the index (session.RequestIndex; every store of
// this module does): of another, PendingRequests fails with code
// no_request_index. A limit below zero or above MaxRequestPage, or a
// kind that is none of session's request kinds, is bad input.
func (r *Runner) PendingRequests(ctx context.Context, opt session.RequestListOptions) ([]session.PendingRequest, error) {
	ri, ok := r.store.(session.RequestIndex)
	if !ok {
		return nil, &Error{Kind: FailConfig, Code: CodeNoRequestIndex,
			Msg: fmt.Sprintf("the store (%T) keeps no index of pending requests (session.RequestIndex): list a session's with Load", r.store)}
	}
	switch opt.Kind {
	case "", session.RequestApproval, session.RequestConfirm, session.RequestPrompt, session.RequestSelect, session.RequestClientTool:
	default:
		return nil, &Error{Kind: FailInput, Msg: fmt.Sprintf("pending requests of kind %q: want approval, confirm, prompt, select or client_tool", opt.Kind)}
	}
	if opt.Limit < 0 || opt.Limit > MaxRequestPage {
		return nil, &Error{Kind: FailInput, Msg: fmt.Sprintf("a page of %d pending requests: want 1 to %d (0 for 50)", opt.Limit, MaxRequestPage)}
	}
	page, err := ri.PendingRequests(ctx, opt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &Error{Kind: FailCanceled, Msg: "list the pending requests", Err: err}
		}
		return nil, &Error{Kind: FailStore, Msg: "list the pending requests", Err: err}
	}
	return page, nil
}
