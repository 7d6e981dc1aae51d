package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

// A client that deletes the sessions it lists, page by page, reaches
// the end: the next of a page follows its last session even when that
// one is gone. An after that is a session's id still works, and one
// naming no session is not_found.
func TestListSessionsWhileDeleting(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, options{store: st})
	var created []string
	for range 5 {
		created = append(created, f.create(t, ""))
	}
	type page struct {
		Sessions []server.SessionInfo `json:"sessions"`
		Next     string               `json:"next"`
	}
	get := func(after string) page {
		t.Helper()
		code, body, _ := f.do(t, "GET", "/v1/sessions?limit=2&after="+after, "", nil)
		var p page
		if code != http.StatusOK || json.Unmarshal(body, &p) != nil {
			t.Fatalf("list after %q: %d %s", after, code, body)
		}
		return p
	}
	var seen []string
	after := ""
	for range 10 {
		p := get(after)
		for _, s := range p.Sessions {
			seen = append(seen, s.ID)
			if code, body, _ := f.do(t, "DELETE", "/v1/sessions/"+s.ID, "", nil); code != http.StatusNoContent {
				t.Fatalf("delete %s: %d %s", s.ID, code, body)
			}
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	slices.Sort(seen)
	slices.Sort(created)
	if diff := cmp.Diff(created, seen); diff != "" {
		t.Errorf("sessions listed while deleting them (-created +listed):\n%s", diff)
	}

	a, b := f.create(t, ""), f.create(t, "")
	first := get("")
	if len(first.Sessions) != 2 || first.Next != "" && len(get(first.Next).Sessions) != 0 {
		t.Fatalf("two sessions: %+v", first)
	}
	newer := first.Sessions[0].ID
	rest := get(newer) // a session's id as after
	if len(rest.Sessions) != 1 || rest.Sessions[0].ID == newer || !slices.Contains([]string{a, b}, rest.Sessions[0].ID) {
		t.Errorf("after the id %s: %+v; want the other session", newer, rest)
	}
	for _, bad := range []string{"~", "~%21%21", "~bm90YWN1cnNvcg", "~MTIzLg"} { // not base64, no time, no id
		if code, body, _ := f.do(t, "GET", "/v1/sessions?after="+bad, "", nil); code != http.StatusBadRequest || !bytes.Contains(body, []byte("malformed_request")) {
			t.Errorf("after=%s: %d %s; want 400 malformed_request", bad, code, body)
		}
	}
	// An id that looks like a token's inside is an id.
	if code, body, _ := f.do(t, "POST", "/v1/sessions", "", map[string]any{"id": "MTIzLng", "agent": "assistant"}); code != http.StatusCreated {
		t.Fatalf("create MTIzLng: %d %s", code, body)
	}
	if code, body, _ := f.do(t, "GET", "/v1/sessions?after=MTIzLng", "", nil); code != http.StatusOK || !bytes.Contains(body, []byte(`"sessions":[{`)) {
		t.Errorf("after=MTIzLng (a session's id): %d %s; want the sessions after it", code, body)
	}
	code, body, _ := f.do(t, "GET", "/v1/sessions?after=nobody", "", nil)
	if want := `{"error":{"code":"not_found","message":"session \"nobody\" not found: after takes a page's next, or a session's id"}}`; code != http.StatusNotFound || string(bytes.TrimSpace(body)) != want {
		t.Errorf("after an unknown id: %d %s; want 404 %s", code, body, want)
	}
}

// The runtime's hidden sessions (claims, agents' rule logs) — here rows
// an older agentrt left, one around each session and a run of them at
// the top — do not show in GET /v1/sessions nor cost a page its
// sessions: for every page size each page is full, and its next lists
// the rest (on b63961d, limit=1 gave {"sessions":[],"next":"~…"}, and
// that next was 400).
func TestListSessionsPagesAreFullAmongHidden(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, options{store: st})
	hide := func(id string) {
		t.Helper()
		now := time.Now()
		if err := st.CreateSession(t.Context(), &session.Session{ID: id, Status: session.StatusIdle, CreatedAt: now, UpdatedAt: now,
			Metadata: map[string]string{"kind": "claim"}}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := range 6 {
		hide(fmt.Sprintf("_claim.%02d", i))
		want = append([]string{f.create(t, "")}, want...) // newest first
		if i%2 == 0 {
			hide(fmt.Sprintf("_rules.a%02d", i))
		}
	}
	for i := range 5 {
		hide(fmt.Sprintf("_claim.top%d", i))
	}
	type page struct {
		Sessions []server.SessionInfo `json:"sessions"`
		Next     string               `json:"next"`
	}
	for limit := 1; limit <= len(want)+1; limit++ {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: the pages do not end", limit)
			}
			code, body, _ := f.do(t, "GET", fmt.Sprintf("/v1/sessions?limit=%d&after=%s", limit, after), "", nil)
			var p page
			if code != http.StatusOK || json.Unmarshal(body, &p) != nil {
				t.Fatalf("limit %d after %q: %d %s", limit, after, code, body)
			}
			if n := min(limit, len(want)-len(got)); len(p.Sessions) != n {
				t.Fatalf("limit %d after %q: a page of %d sessions (%s), want %d", limit, after, len(p.Sessions), body, n)
			}
			for _, s := range p.Sessions {
				got = append(got, s.ID)
			}
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d listed %v, want %v", limit, got, want)
		}
	}
}
