package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

type inboxPage struct {
	Requests []server.PendingRequestInfo `json:"requests"`
	Next     string                      `json:"next"`
}

// GET /v1/requests is a person's inbox: the tenant's pending requests
// across its sessions, oldest first, paged; another tenant's are not in
// it; an answered request leaves it.
func TestPersonsInbox(t *testing.T) {
	f := newFixture(t, options{keys: twoTenants})
	var ids []string
	for range 3 {
		id := f.create(t, "key-acme")
		f.do(t, "POST", "/v1/sessions/"+id+"/messages", "key-acme", map[string]any{"text": `call deploy {"env":"prod"}`})
		f.waitStatus(t, id, session.StatusWaiting, "acme")
		ids = append(ids, id)
	}
	other := f.create(t, "key-globex")
	f.do(t, "POST", "/v1/sessions/"+other+"/messages", "key-globex", map[string]any{"text": `call deploy {"env":"dev"}`})
	f.waitStatus(t, other, session.StatusWaiting, "globex")

	list := func(key, query string) inboxPage {
		t.Helper()
		code, body, _ := f.do(t, "GET", "/v1/requests?"+query, key, nil)
		var p inboxPage
		if err := json.Unmarshal(body, &p); code != http.StatusOK || err != nil {
			t.Fatalf("GET /v1/requests?%s: %d %s", query, code, body)
		}
		return p
	}
	var got []string
	next := ""
	pages := 0
	for {
		p := list("key-acme", "status=pending&limit=2&after="+url.QueryEscape(next))
		pages++
		for _, r := range p.Requests {
			got = append(got, r.SessionID)
			if r.Request.Kind != session.RequestApproval || len(r.Request.Calls) != 1 || r.Request.Calls[0].Name != "deploy" || r.Agent != "assistant" || r.AgeSeconds < 0 {
				t.Errorf("request %+v", r)
			}
		}
		if next = p.Next; next == "" {
			break
		}
	}
	if len(got) != 3 || pages != 2 || got[0] != ids[0] || got[1] != ids[1] || got[2] != ids[2] {
		t.Fatalf("acme's inbox in %d pages: %v, want %v oldest first in 2 pages", pages, got, ids)
	}
	if p := list("key-globex", ""); len(p.Requests) != 1 || p.Requests[0].SessionID != other {
		t.Fatalf("globex's inbox: %+v", p)
	}
	if p := list("key-acme", "session="+ids[1]); len(p.Requests) != 1 || p.Requests[0].SessionID != ids[1] {
		t.Fatalf("filtered by session: %+v", p)
	}

	// Answered, it leaves the inbox.
	first := list("key-acme", "limit=1").Requests[0]
	code, body, _ := f.do(t, "POST", "/v1/sessions/"+first.SessionID+"/requests/"+first.Request.RequestID, "key-acme", map[string]any{"decision": "reject"})
	if code != http.StatusOK {
		t.Fatalf("reject: %d %s", code, body)
	}
	if p := list("key-acme", ""); len(p.Requests) != 2 || p.Requests[0].SessionID == first.SessionID {
		t.Fatalf("after an answer: %+v", p)
	}

	for _, q := range []string{"status=resolved", "limit=0", "limit=x", "after=%%%", "after=bm90YWN1cnNvcg", "kind=poem"} {
		code, body, _ := f.do(t, "GET", "/v1/requests?"+q, "key-acme", nil)
		if code != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, code, body)
		}
	}
}
