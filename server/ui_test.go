package server_test

import (
	"context"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// page is an inspector page as a browser gets it.
type page struct {
	status int
	hdr    http.Header
	body   string
	loc    string // a redirect's Location
}

// uiClient is a browser without scripts: cookies kept, redirects not
// followed (a test looks at them).
func uiClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) page {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return doPage(t, c, req)
}

func postForm(t *testing.T, c *http.Client, u string, form url.Values, hdr ...string) page {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return doPage(t, c, req)
}

func doPage(t *testing.T, c *http.Client, req *http.Request) page {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, hdr: resp.Header, body: string(b), loc: resp.Header.Get("Location")}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf is the CSRF token of a page's forms.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", p.body)
	}
	return m[1]
}

// waitingSession runs a turn of session id that asks to deploy to prod,
// and returns once it waits for the approval.
func waitingSession(t *testing.T, f *fixture, ctx context.Context, id string) {
	t.Helper()
	if _, err := f.r.CreateSession(ctx, "assistant", id, nil); err != nil {
		t.Fatal(err)
	}
	if st := runTurn(t, f, ctx, id, `call deploy {"env":"prod"}`); st != session.StatusWaiting {
		t.Fatalf("the turn ended %s; want it waiting for the approval", st)
	}
}

// runTurn runs a turn of session id to its end and returns its status.
func runTurn(t *testing.T, f *fixture, ctx context.Context, id, text string) session.Status {
	t.Helper()
	for _, err := range f.r.Run(ctx, id, agentrt.Input{Text: text}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := f.store.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return s.Status
}

// A person's path through the inspector without keys: / leads to the
// sessions, the session shows its timeline and its pending approval, the
// inbox lists it, Approve (a form with its CSRF token) lets the run go on
// to its end, and the page then shows the tool's result.
func TestUIApproveFromTheInbox(t *testing.T) {
	f := newFixture(t, options{})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	waitingSession(t, f, ctx, "S")
	c := uiClient(t)

	if p := get(t, c, f.http.URL+"/"); p.status != http.StatusSeeOther || p.loc != "/ui/" {
		t.Fatalf("GET /: %d %q, want 303 to /ui/", p.status, p.loc)
	}
	list := get(t, c, f.http.URL+"/ui/")
	if list.status != 200 || !strings.Contains(list.body, `href="/ui/sessions/S"`) || !strings.Contains(list.body, "1 waiting") {
		t.Fatalf("GET /ui/: %d, want the session S listed with its request:\n%s", list.status, list.body)
	}
	for h, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
		if !strings.Contains(list.hdr.Get(h), want) {
			t.Errorf("%s: %q, want %q in it", h, list.hdr.Get(h), want)
		}
	}
	sp := get(t, c, f.http.URL+"/ui/sessions/S")
	for _, want := range []string{"model replied", "tool_call", `&#34;env&#34;: &#34;prod&#34;`, "Approve", "Reject", "asked a person: approval"} {
		if !strings.Contains(sp.body, want) {
			t.Errorf("the session's page lacks %q", want)
		}
	}
	inbox := get(t, c, f.http.URL+"/ui/inbox")
	if !strings.Contains(inbox.body, "Approve") || !strings.Contains(inbox.body, `action="/ui/sessions/S/requests/`) {
		t.Fatalf("the inbox lacks the request's form:\n%s", inbox.body)
	}
	action := regexp.MustCompile(`action="(/ui/sessions/S/requests/[^"]+)"`).FindStringSubmatch(inbox.body)[1]
	// What the page polls to see the inbox change: the requests' ids.
	rid := strings.TrimPrefix(action, "/ui/sessions/S/requests/")
	if ids := get(t, c, f.http.URL+"/ui/inbox?fragment=ids"); ids.body != "S/"+rid+"\n" || !strings.Contains(inbox.body, `data-ids="S/`+rid+` "`) {
		t.Errorf("the inbox's ids: %q, and the page's data-ids, want S/%s", ids.body, rid)
	}
	p := postForm(t, c, f.http.URL+action, url.Values{"csrf": {csrfOf(t, inbox)}, "back": {"inbox"}, "decision": {"approve"}})
	if p.status != http.StatusSeeOther || p.loc != "/ui/inbox" {
		t.Fatalf("Approve: %d %q %s, want 303 back to the inbox", p.status, p.loc, p.body)
	}
	waitStatus(t, f, ctx, "S", session.StatusDone)
	done := get(t, c, f.http.URL+"/ui/sessions/S")
	for _, want := range []string{"deployed to prod", "run done", "answered: approve", "by local"} {
		if !strings.Contains(done.body, want) {
			t.Errorf("after the approval the page lacks %q:\n%s", want, done.body)
		}
	}
	if strings.Contains(get(t, c, f.http.URL+"/ui/inbox").body, "Approve") {
		t.Error("the inbox still shows the answered request")
	}
	if ids := get(t, c, f.http.URL+"/ui/inbox?fragment=ids"); ids.status != 200 || ids.body != "" {
		t.Errorf("the inbox's ids once answered: %d %q, want none", ids.status, ids.body)
	}
	// What each model call was sent, a click away.
	links := regexp.MustCompile(`href="(/ui/sessions/S/sent/\d+)"`).FindAllStringSubmatch(done.body, -1)
	if len(links) != 2 {
		t.Fatalf("%d links to what the model was sent, want one a model call (2)", len(links))
	}
	sent := get(t, c, f.http.URL+links[0][1])
	for _, want := range []string{"What the model was sent", "You help.", "call deploy {&#34;env&#34;:&#34;prod&#34;}", "deploy — deploys"} {
		if sent.status != 200 || !strings.Contains(sent.body, want) {
			t.Errorf("the first call's page (%d) lacks %q:\n%s", sent.status, want, sent.body)
		}
	}
	second := get(t, c, f.http.URL+links[1][1])
	if !strings.Contains(second.body, "deployed to prod") {
		t.Errorf("the second call's page lacks the tool's result it was sent:\n%s", second.body)
	}
	for path, want := range map[string]int{"/ui/sessions/S/sent/x": 400, "/ui/sessions/S/sent/1": 404, "/ui/sessions/S/sent/999": 404, "/ui/sessions/nope/sent/3": 404} {
		if p := get(t, c, f.http.URL+path); p.status != want {
			t.Errorf("GET %s: %d, want %d", path, p.status, want)
		}
	}
}

// waitStatus waits until session id has status want.
func waitStatus(t *testing.T, f *fixture, ctx context.Context, id string, want session.Status) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := f.store.GetSession(ctx, id)
		if err == nil && s.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: %v %v, want %s", id, s, err, want)
		}
		time.Sleep(10 * time.Millisecond) // polls the store; orders nothing
	}
}

// sendAndWait sends a message to session id through the page, and waits
// for the turn that answers it to finish.
func sendAndWait(t *testing.T, f *fixture, ctx context.Context, send func(id, text string) page, id, text string) {
	t.Helper()
	before, err := f.store.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	send(id, text)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := f.store.GetSession(ctx, id)
		if err == nil && s.Turn > before.Turn && s.Status == session.StatusDone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: %v %v, want a turn after %d done", id, s, err, before.Turn)
		}
		time.Sleep(10 * time.Millisecond) // polls the store; orders nothing
	}
}

// What a model, a tool or a person typed is text on the page, never markup.
func TestUIEscapes(t *testing.T) {
	f := newFixture(t, options{})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "assistant", "X", map[string]string{"user": "<b>ana</b>"}); err != nil {
		t.Fatal(err)
	}
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	runTurn(t, f, ctx, "X", evil)
	c := uiClient(t)
	for _, path := range []string{"/ui/sessions/X", "/ui/", "/ui/?q=" + url.QueryEscape(evil)} {
		p := get(t, c, f.http.URL+path)
		if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "<img src=x") {
			t.Errorf("%s renders the input as markup:\n%s", path, p.body)
		}
	}
	if p := get(t, c, f.http.URL+"/ui/sessions/X"); !strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the session's page does not show the input as text:\n%s", p.body)
	}
}

// The inspector's hostile edge: another site's page, a rebound name, a
// body a page sends without a preflight, a form without its token, paths
// and parameters that are not what the pages make.
func TestUIRefuses(t *testing.T) {
	f := newFixture(t, options{})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	waitingSession(t, f, ctx, "S")
	c := uiClient(t)
	token := csrfOf(t, get(t, c, f.http.URL+"/ui/sessions/S"))
	approve := f.http.URL + "/ui/sessions/S/requests/nope"
	form := url.Values{"csrf": {token}, "decision": {"approve"}}

	for _, tc := range []struct {
		name string
		do   func() page
		want int
	}{
		{"a foreign Host", func() page { return pageOf(send(t, f.http.URL, "GET", "/ui/", "evil.example:8080", "")) }, http.StatusMisdirectedRequest},
		{"a form of another origin", func() page {
			return postForm(t, c, f.http.URL+"/ui/sessions/S/cancel", form, "Origin", "https://evil.example")
		}, http.StatusForbidden},
		{"a form of another site without an Origin", func() page {
			return postForm(t, c, f.http.URL+"/ui/sessions/S/cancel", form, "Sec-Fetch-Site", "cross-site")
		}, http.StatusForbidden},
		{"text/plain", func() page {
			return pageOf(send(t, f.http.URL, "POST", "/ui/sessions/S/cancel", "", "csrf="+token, "Content-Type", "text/plain"))
		}, http.StatusUnsupportedMediaType},
		{"JSON", func() page {
			return pageOf(send(t, f.http.URL, "POST", "/ui/sessions/S/cancel", "", `{"csrf":"`+token+`"}`, "Content-Type", "application/json"))
		}, http.StatusUnsupportedMediaType},
		{"no CSRF token", func() page { return postForm(t, c, f.http.URL+"/ui/sessions/S/cancel", url.Values{}) }, http.StatusForbidden},
		{"another token", func() page {
			return postForm(t, c, f.http.URL+"/ui/sessions/S/cancel", url.Values{"csrf": {token + "x"}})
		}, http.StatusForbidden},
		{"an unknown action", func() page { return postForm(t, c, f.http.URL+"/ui/sessions/S/explode", form) }, http.StatusNotFound},
		{"an unknown session", func() page { return get(t, c, f.http.URL+"/ui/sessions/nope") }, http.StatusNotFound},
		{"a status that is none", func() page { return get(t, c, f.http.URL+"/ui/?status=%3Cb%3E") }, http.StatusBadRequest},
		{"a before that is no seq", func() page { return get(t, c, f.http.URL+"/ui/sessions/S?before=x") }, http.StatusBadRequest},
		{"a static file that is none", func() page { return get(t, c, f.http.URL+"/ui/static/..%2Fui.go") }, http.StatusNotFound},
		{"the event stream asked as a page", func() page { return get(t, c, f.http.URL+"/ui/sessions/S/events") }, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := tc.do(); p.status != tc.want {
				t.Errorf("%d, want %d:\n%s", p.status, tc.want, p.body)
			}
		})
	}
	// None of it changed the session.
	if s, err := f.store.GetSession(ctx, "S"); err != nil || s.Status != session.StatusWaiting {
		t.Errorf("session S after the refusals: %v %v, want still waiting", s, err)
	}
	// A wrong answer is shown by its request, not lost.
	p := postForm(t, c, approve, form)
	if p.status != http.StatusSeeOther || !strings.Contains(p.loc, "error=") {
		t.Fatalf("an answer to no request: %d %q, want 303 back with the error", p.status, p.loc)
	}
	sp := get(t, c, f.http.URL+"/ui/sessions/S")
	action := regexp.MustCompile(`action="(/ui/sessions/S/requests/[^"]+)"`).FindStringSubmatch(sp.body)[1]
	p = postForm(t, c, f.http.URL+action, url.Values{"csrf": {token}, "decision": {"edit"}, "arguments": {`{"env":`}})
	if p.status != http.StatusSeeOther || !strings.Contains(p.loc, "error=") {
		t.Fatalf("edited arguments that are not JSON: %d %q, want 303 back with the error", p.status, p.loc)
	}
	if shown := get(t, c, f.http.URL+p.loc); !strings.Contains(shown.body, "the arguments are not JSON") {
		t.Errorf("the error is not shown by the request:\n%s", shown.body)
	}
	// An error in a link of somebody else's is not shown: only those the
	// server signed when it sent the page back.
	for _, path := range []string{"/ui/sessions/S?error=Your+key+expired%2C+sign+in+at+evil.example",
		"/ui/inbox?rid=x&error=Your+key+expired%2C+sign+in+at+evil.example&sig=forged", "/ui/runtime?error=Your+key+expired%2C+sign+in+at+evil.example"} {
		if p := get(t, c, f.http.URL+path); strings.Contains(p.body, "evil.example") {
			t.Errorf("%s shows the link's text:\n%s", path, p.body)
		}
	}
}

func pageOf(a reply) page {
	return page{status: a.status, hdr: a.hdr, body: string(a.body), loc: a.hdr.Get("Location")}
}

// With API keys: a sign-in with a key gives a signed, HttpOnly,
// SameSite=Strict cookie; a person sees only their key's tenant; a cookie
// of another server, tampered with or of a key removed is no sign-in; the
// page after sign-in is one of the inspector's, never another site.
func TestUISignIn(t *testing.T) {
	keys := []server.Key{{Key: "key-a", Tenant: "acme", Principal: "ana"}, {Key: "key-b", Tenant: "globex", Principal: "bo"}}
	f := newFixture(t, options{keys: keys, config: func(c *server.Config) { c.UISecret = []byte("secret one") }})
	for tenant, id := range map[string]string{"acme": "A1", "globex": "G1"} {
		if _, err := f.r.CreateSession(session.WithTenant(t.Context(), tenant), "assistant", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	c := uiClient(t)
	p := get(t, c, f.http.URL+"/ui/sessions/A1")
	if p.status != http.StatusSeeOther || p.loc != "/ui/login?next=%2Fui%2Fsessions%2FA1" {
		t.Fatalf("a page before sign-in: %d %q, want 303 to the sign-in", p.status, p.loc)
	}
	login := get(t, c, f.http.URL+p.loc)
	token := csrfOf(t, login)
	if p := postForm(t, c, f.http.URL+"/ui/login", url.Values{"csrf": {token}, "key": {"wrong"}, "next": {"/ui/"}}); p.status != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d, want 401", p.status)
	}
	p = postForm(t, c, f.http.URL+"/ui/login", url.Values{"csrf": {token}, "key": {"key-a"}, "next": {"//evil.example/x"}})
	if p.status != http.StatusSeeOther || p.loc != "/ui/" {
		t.Fatalf("sign-in with next //evil.example: %d %q, want 303 to /ui/", p.status, p.loc)
	}
	cookie := p.hdr.Get("Set-Cookie")
	for _, want := range []string{"agentrt_ui=", "HttpOnly", "SameSite=Strict", "Path=/ui/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %q", cookie, want)
		}
	}
	if strings.Contains(cookie, "key-a") {
		t.Error("the cookie holds the key")
	}
	list := get(t, c, f.http.URL+"/ui/")
	if !strings.Contains(list.body, "A1") || strings.Contains(list.body, "G1") || !strings.Contains(list.body, "ana") {
		t.Errorf("acme's list: want A1, not globex's G1, and the principal:\n%s", list.body)
	}
	if p := get(t, c, f.http.URL+"/ui/sessions/G1"); p.status != http.StatusNotFound {
		t.Errorf("another tenant's session: %d, want 404", p.status)
	}
	// The cookie, tampered with, or signed by another server.
	u, _ := url.Parse(f.http.URL + "/ui/")
	good := c.Jar.Cookies(u)[0].Value
	other := newFixture(t, options{keys: keys, config: func(c *server.Config) { c.UISecret = []byte("secret two") }})
	for name, v := range map[string]string{"tampered": good[:len(good)-2] + "xx", "no signature": strings.SplitN(good, ".", 2)[0]} {
		if p := get(t, http.DefaultClient, f.http.URL+"/ui/", "Cookie", "agentrt_ui="+v); p.status != http.StatusOK || !strings.Contains(p.body, "Sign in") {
			t.Errorf("%s cookie: %d, want the sign-in page", name, p.status)
		}
	}
	nr := uiClient(t)
	if p := get(t, nr, other.http.URL+"/ui/", "Cookie", "agentrt_ui="+good); p.status != http.StatusSeeOther || !strings.HasPrefix(p.loc, "/ui/login") {
		t.Errorf("another server's cookie: %d %q, want the sign-in", p.status, p.loc)
	}
	// Bearer keys are the API's: a page takes none.
	if p := get(t, uiClient(t), f.http.URL+"/ui/", "Authorization", "Bearer key-a"); p.status != http.StatusSeeOther {
		t.Errorf("a page with a bearer key and no sign-in: %d, want the sign-in", p.status)
	}
	// A form needs the signed-in person's token: the sign-in page's is not it.
	if p := postForm(t, c, f.http.URL+"/ui/sessions/A1/cancel", url.Values{"csrf": {token}}); p.status != http.StatusForbidden {
		t.Errorf("a form with the token of before the sign-in: %d, want 403", p.status)
	}
	// Sign out: the cookie goes.
	out := postForm(t, c, f.http.URL+"/ui/logout", url.Values{"csrf": {csrfOf(t, list)}})
	if out.status != http.StatusSeeOther || !strings.Contains(out.hdr.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign out: %d %q", out.status, out.hdr.Get("Set-Cookie"))
	}
	if p := get(t, c, f.http.URL+"/ui/"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want the sign-in", p.status)
	}
}

// NoUI leaves the pages out; the API stays.
func TestUIOff(t *testing.T) {
	f := newFixture(t, options{config: func(c *server.Config) { c.NoUI = true }})
	c := uiClient(t)
	for _, path := range []string{"/", "/ui/", "/ui/inbox", "/ui/static/app.js"} {
		if p := get(t, c, f.http.URL+path); p.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, p.status)
		}
	}
	if p := get(t, c, f.http.URL+"/v1/sessions"); p.status != http.StatusOK {
		t.Errorf("GET /v1/sessions: %d, want 200", p.status)
	}
	if n := len(f.srv.UIRoutes()); n != 0 {
		t.Errorf("%d UI routes, want none", n)
	}
}

// The playground: a new session from the sessions page, a message to it
// through the gateway (and what the page says of one sent while a turn
// runs), a fork at an event, a message that takes the fork another way,
// and the two logs side by side with the first difference marked.
func TestUIPlaygroundForkDiff(t *testing.T) {
	f := newFixture(t, options{hold: true})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	c := uiClient(t)
	list := get(t, c, f.http.URL+"/ui/")
	token := csrfOf(t, list)
	if !strings.Contains(list.body, "<option>assistant</option>") {
		t.Fatalf("the new-session form lacks the agent:\n%s", list.body)
	}
	for _, bad := range []url.Values{{"agent": {"assistant"}, "id": {"a b"}}, {"agent": {"nobody"}}} {
		bad.Set("csrf", token)
		if p := postForm(t, c, f.http.URL+"/ui/sessions", bad); p.status < 400 {
			t.Errorf("a new session %v: %d, want refused", bad, p.status)
		}
	}
	p := postForm(t, c, f.http.URL+"/ui/sessions", url.Values{"csrf": {token}, "agent": {"assistant"}, "id": {"P"}})
	if p.status != http.StatusSeeOther || p.loc != "/ui/sessions/P?note=created#send" {
		t.Fatalf("a new session: %d %q", p.status, p.loc)
	}
	send := func(id, text string) page {
		t.Helper()
		return postForm(t, c, f.http.URL+"/ui/sessions/"+id+"/messages", url.Values{"csrf": {token}, "text": {text}})
	}
	if p := send("P", "  "); !strings.Contains(p.loc, "error=") {
		t.Errorf("an empty message: %q, want an error", p.loc)
	}
	if p := send("P", "hello"); p.loc != "/ui/sessions/P?note=sent" {
		t.Errorf("a message: %d %q", p.status, p.loc)
	}
	waitStatus(t, f, ctx, "P", session.StatusRunning)
	// While the turn runs (held at the model): the default policy.
	if p := send("P", "and more"); p.loc != "/ui/sessions/P?note=interrupt" {
		t.Errorf("a message while a turn runs: %q, want note=interrupt", p.loc)
	}
	if sp := get(t, c, f.http.URL+"/ui/sessions/P?note=interrupt"); !strings.Contains(sp.body, "by its source&#39;s policy (interrupt)") {
		t.Errorf("the page does not say what the policy did:\n%s", sp.body)
	}
	close(f.model.hold)
	waitStatus(t, f, ctx, "P", session.StatusDone)

	p = postForm(t, c, f.http.URL+"/ui/sessions/P/fork", url.Values{"csrf": {token}, "at": {"1"}})
	fork, ok := strings.CutPrefix(p.loc, "/ui/sessions/")
	if p.status != http.StatusSeeOther || !ok {
		t.Fatalf("fork: %d %q", p.status, p.loc)
	}
	fork, _, _ = strings.Cut(fork, "?")
	fp := get(t, c, f.http.URL+p.loc)
	if !strings.Contains(fp.body, "Forked from") || !strings.Contains(fp.body, "/ui/diff?a=P&amp;b="+fork) {
		t.Errorf("the fork's page does not link the comparison:\n%s", fp.body)
	}
	for _, at := range []string{"x", "0", "999"} {
		if p := postForm(t, c, f.http.URL+"/ui/sessions/P/fork", url.Values{"csrf": {token}, "at": {at}}); !strings.Contains(p.loc, "error=") {
			t.Errorf("fork at %q: %q, want an error", at, p.loc)
		}
	}
	sendAndWait(t, f, ctx, send, fork, "goodbye")
	diff := get(t, c, f.http.URL+"/ui/diff?a=P&b="+fork)
	if diff.status != 200 || !strings.Contains(diff.body, "first difference") || !strings.Contains(diff.body, "goodbye") {
		t.Errorf("the diff: %d, want the first difference marked and the fork's message:\n%s", diff.status, diff.body)
	}
	if p := get(t, c, f.http.URL+"/ui/diff?a=P&b=nope"); p.status != http.StatusNotFound {
		t.Errorf("a diff with no such session: %d, want 404", p.status)
	}

	// A fork with another model: the form offers the agent's models; the
	// fork's log ends with model_changed, its turn calls that model, and
	// the diff marks the change as the first difference.
	if pp := get(t, c, f.http.URL+"/ui/sessions/P"); !strings.Contains(pp.body, `<option value="shout">shout</option>`) {
		t.Errorf("the fork form does not offer the agent's other model:\n%s", pp.body)
	}
	if p := postForm(t, c, f.http.URL+"/ui/sessions/P/fork", url.Values{"csrf": {token}, "at": {"1"}, "model": {"nope"}}); !strings.Contains(p.loc, "error=") {
		t.Errorf("fork with an unknown model: %q, want an error", p.loc)
	}
	ps, err := f.store.GetSession(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	p = postForm(t, c, f.http.URL+"/ui/sessions/P/fork", url.Values{"csrf": {token}, "at": {strconv.FormatInt(ps.LastSeq, 10)}, "model": {"shout"}})
	shout, _, _ := strings.Cut(strings.TrimPrefix(p.loc, "/ui/sessions/"), "?")
	if p.status != http.StatusSeeOther || shout == "" {
		t.Fatalf("fork with a model: %d %q", p.status, p.loc)
	}
	if sp := get(t, c, f.http.URL+"/ui/sessions/"+shout); !strings.Contains(sp.body, "model changed to shout") {
		t.Errorf("the fork's timeline does not show the change:\n%s", sp.body)
	}
	sendAndWait(t, f, ctx, send, shout, "louder")
	var called []string
	for e, err := range f.store.Events(ctx, shout, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ms, ok := e.Data.(*session.ModelStarted); ok {
			called = append(called, ms.Model)
		}
	}
	if n := len(called); n < 2 || called[0] != "echo" || called[n-1] != "shout" || slices.Contains(called[:n-1], "shout") {
		t.Errorf("the fork's model calls: %v, want the original's (echo), then the fork's (shout)", called)
	}
	if diff := get(t, c, f.http.URL+"/ui/diff?a=P&b="+shout); !strings.Contains(diff.body, "model changed to shout") {
		t.Errorf("the diff does not show the change:\n%s", diff.body)
	}
	if code, body, _ := f.do(t, "POST", "/v1/sessions/P/fork", "", map[string]any{"at_seq": 1, "model": "nope"}); code != http.StatusBadRequest || !strings.Contains(string(body), "unknown_model") {
		t.Errorf("API fork with an unknown model: %d %s", code, body)
	}
}

// The runtime page: the gateway's sources with pending inputs (their
// policy and when they settle), a tenant's own only; the sessions waiting
// with their lease; an agent's standing decision, revoked from the page.
func TestUIRuntime(t *testing.T) {
	keys := []server.Key{{Key: "key-a", Tenant: "acme", Principal: "ana"}, {Key: "key-b", Tenant: "globex", Principal: "bo"}}
	f := newFixture(t, options{keys: keys, gateway: func(c *gateway.Config) { c.Debounce = time.Hour }})
	for key, id := range map[string]string{"key-a": "A1", "key-b": "G1"} {
		if code, body, _ := f.do(t, "POST", "/v1/sessions", key, map[string]any{"id": id}); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", id, code, body)
		}
		if code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", key, map[string]any{"text": "hi"}); code != http.StatusAccepted {
			t.Fatalf("message to %s: %d %s", id, code, body)
		}
	}
	acme := session.WithTenant(t.Context(), "acme")
	waitingSession(t, f, acme, "W")
	c := uiClient(t)
	login := get(t, c, f.http.URL+"/ui/login")
	postForm(t, c, f.http.URL+"/ui/login", url.Values{"csrf": {csrfOf(t, login)}, "key": {"key-a"}, "next": {"/ui/runtime"}})
	rt := get(t, c, f.http.URL+"/ui/runtime")
	for _, want := range []string{`href="/ui/sessions/A1"`, "interrupt", "1h0m0s, settles", `href="/ui/sessions/W"`, "waiting", "takes writes"} {
		if !strings.Contains(rt.body, want) {
			t.Errorf("the runtime page lacks %q:\n%s", want, rt.body)
		}
	}
	if strings.Contains(rt.body, "G1") {
		t.Error("the runtime page shows another tenant's source")
	}
	// An approval that stands for the agent, then revoked from the page.
	sp := get(t, c, f.http.URL+"/ui/sessions/W")
	action := regexp.MustCompile(`action="(/ui/sessions/W/requests/[^"]+)"`).FindStringSubmatch(sp.body)[1]
	postForm(t, c, f.http.URL+action, url.Values{"csrf": {csrfOf(t, sp)}, "decision": {"approve"}, "always": {"agent"}})
	rt = get(t, c, f.http.URL+"/ui/runtime")
	revoke := regexp.MustCompile(`action="(/ui/rules/assistant/[^"]+/revoke)"`).FindStringSubmatch(rt.body)
	if revoke == nil {
		t.Fatalf("the runtime page lacks the agent's standing decision:\n%s", rt.body)
	}
	if p := postForm(t, c, f.http.URL+revoke[1], url.Values{"csrf": {csrfOf(t, rt)}}); p.loc != "/ui/runtime?note=revoked" {
		t.Fatalf("revoke: %d %q", p.status, p.loc)
	}
	if rules, err := f.r.AgentRules(acme, "assistant"); err != nil || len(rules) != 0 {
		t.Errorf("after the revocation: %v %v, want no rule", rules, err)
	}
	if p := postForm(t, c, f.http.URL+revoke[1], url.Values{"csrf": {csrfOf(t, rt)}}); !strings.Contains(p.loc, "error=") {
		t.Errorf("revoking it again: %q, want an error", p.loc)
	}
}

// Delete, confirmed by typing the session's id.
func TestUIDelete(t *testing.T) {
	f := newFixture(t, options{})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "assistant", "D", nil); err != nil {
		t.Fatal(err)
	}
	runTurn(t, f, ctx, "D", "hello")
	c := uiClient(t)
	token := csrfOf(t, get(t, c, f.http.URL+"/ui/sessions/D"))
	for _, confirm := range []string{"", "d", "D "} {
		p := postForm(t, c, f.http.URL+"/ui/sessions/D/delete", url.Values{"csrf": {token}, "confirm": {confirm}})
		if !strings.Contains(p.loc, "error=") {
			t.Errorf("delete confirmed by %q: %d %q, want refused", confirm, p.status, p.loc)
		}
	}
	if _, err := f.store.GetSession(ctx, "D"); err != nil {
		t.Fatalf("the session went without its confirmation: %v", err)
	}
	if p := postForm(t, c, f.http.URL+"/ui/sessions/D/delete", url.Values{"csrf": {token}, "confirm": {"D"}}); p.loc != "/ui/" {
		t.Fatalf("delete: %d %q", p.status, p.loc)
	}
	if _, err := f.store.GetSession(ctx, "D"); err == nil {
		t.Error("the session is still there")
	}
}

// The sessions filtered by agent, by the store.
func TestUISessionsByAgent(t *testing.T) {
	f := newFixture(t, options{})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "assistant", "mine", nil); err != nil {
		t.Fatal(err)
	}
	c := uiClient(t)
	if p := get(t, c, f.http.URL+"/ui/?agent=assistant"); !strings.Contains(p.body, `href="/ui/sessions/mine"`) || !strings.Contains(p.body, "<option selected>assistant</option>") {
		t.Errorf("the assistant's sessions lack mine:\n%s", p.body)
	}
	if p := get(t, c, f.http.URL+"/ui/?agent=nobody"); strings.Contains(p.body, `href="/ui/sessions/mine"`) {
		t.Errorf("another agent's sessions list mine:\n%s", p.body)
	}
}

// Edited arguments from the form generated from the tool's schema: the
// call runs with them.
func TestUIEditByFields(t *testing.T) {
	f := newFixture(t, options{})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	waitingSession(t, f, ctx, "E")
	c := uiClient(t)
	sp := get(t, c, f.http.URL+"/ui/sessions/E")
	if !strings.Contains(sp.body, `name="arg.env" value="prod"`) {
		t.Fatalf("no field for the argument env:\n%s", sp.body)
	}
	action := regexp.MustCompile(`action="(/ui/sessions/E/requests/[^"]+)"`).FindStringSubmatch(sp.body)[1]
	p := postForm(t, c, f.http.URL+action, url.Values{"csrf": {csrfOf(t, sp)}, "decision": {"edit"}, "fields": {"1"},
		"type.env": {"string"}, "required.env": {"1"}, "arg.env": {"staging"}})
	if p.status != http.StatusSeeOther || strings.Contains(p.loc, "error=") {
		t.Fatalf("edit by fields: %d %q", p.status, p.loc)
	}
	waitStatus(t, f, ctx, "E", session.StatusDone)
	if done := get(t, c, f.http.URL+"/ui/sessions/E"); !strings.Contains(done.body, "deployed to staging") || !strings.Contains(done.body, "answered: edit") {
		t.Errorf("after the edit the page lacks the edited call's result:\n%s", done.body)
	}
}

// A signed-in person's pages count against their key's rate, as its API
// requests do.
func TestUIRateLimited(t *testing.T) {
	f := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme", Rate: 0.001, Burst: 2}}})
	c := uiClient(t)
	login := get(t, c, f.http.URL+"/ui/login")
	if p := postForm(t, c, f.http.URL+"/ui/login", url.Values{"csrf": {csrfOf(t, login)}, "key": {"k"}, "next": {"/ui/"}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", p.status)
	}
	var last page
	for range 3 {
		last = get(t, c, f.http.URL+"/ui/")
	}
	if last.status != http.StatusTooManyRequests || last.hdr.Get("Retry-After") == "" || !strings.Contains(last.body, "over its rate") {
		t.Errorf("the third page at a burst of 2: %d Retry-After %q, want 429 saying why", last.status, last.hdr.Get("Retry-After"))
	}
}

// A running session whose lease expired (its process stopped) is listed
// on the runtime page as a run to recover, with the lease it had.
func TestUIRuntimeRunsToRecover(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	store := memstore.New(memstore.WithClock(func() time.Time { return time.Unix(0, now.Load()) }))
	// The gateway's loop would resume R, a run to recover, as it starts.
	f := newFixture(t, options{store: store, noLoop: true})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "assistant", "R", nil); err != nil {
		t.Fatal(err)
	}
	l, err := store.Acquire(ctx, "R", "gone-process", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, &session.Commit{SessionID: "R", Status: session.StatusRunning, Time: time.Now(), Fence: l.Token}); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(2 * time.Minute)) // the lease's owner never renewed it
	rt := get(t, uiClient(t), f.http.URL+"/ui/runtime")
	if !strings.Contains(rt.body, `<a href="/ui/sessions/R">R</a></td><td>gone-process, token`) || !strings.Contains(rt.body, "expired") {
		t.Errorf("the runtime page does not list R to recover:\n%s", rt.body)
	}
}

// A sub-agent's timeline is nested in its parent's, under the row that
// started it, with its own "what the model was sent" links; its session
// is a link away.
func TestUISubagentNested(t *testing.T) {
	subs, err := tool.NewRegistry(agentrt.SubAgent("helper", "helps"))
	if err != nil {
		t.Fatal(err)
	}
	helper := &agentrt.Agent{Name: "helper", Description: "helps", Model: scripted.New("hm", scripted.Reply{Text: "the helper's <answer>"})}
	boss := &agentrt.Agent{Name: "boss", Model: scripted.New("bm",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("helper", `{"task":"look it up"}`)}},
		scripted.Reply{Text: "done"}), Tools: subs}
	f := newFixture(t, options{agents: []*agentrt.Agent{helper, boss}})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "boss", "B", nil); err != nil {
		t.Fatal(err)
	}
	if st := runTurn(t, f, ctx, "B", "ask the helper"); st != session.StatusDone {
		t.Fatalf("the turn: %s", st)
	}
	var child string
	for e, err := range f.store.Events(ctx, "B", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := e.Data.(*session.SubagentStarted); ok {
			child = d.ChildSession
		}
	}
	if child == "" {
		t.Fatal("no sub-agent started")
	}
	p := get(t, uiClient(t), f.http.URL+"/ui/sessions/B")
	for _, want := range []string{
		`<details class="nested"><summary>The sub-agent's timeline: 6 events`,
		`the helper&#39;s &lt;answer&gt;`,
		`href="/ui/sessions/` + child + `/sent/`,
		`href="/ui/sessions/` + child + `"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the parent's page lacks %s:\n%s", want, p.body)
		}
	}
	// A sub-agent's session deleted: its row stays, with nothing nested.
	if err := f.r.DeleteSession(ctx, child, true); err != nil {
		t.Fatal(err)
	}
	if p := get(t, uiClient(t), f.http.URL+"/ui/sessions/B"); p.status != 200 || strings.Contains(p.body, `class="nested"`) {
		t.Errorf("the parent's page with its sub-agent deleted: %d\n%s", p.status, p.body)
	}
}

// The search box finds a session by its id, or by a source whose inputs go
// to it (the gateway's SessionFor); anything else says so.
func TestUIFindBySource(t *testing.T) {
	f := newFixture(t, options{gateway: func(c *gateway.Config) {
		c.SessionFor = func(source string) (string, error) {
			if rest, ok := strings.CutPrefix(source, "chat:"); ok {
				return "S-" + rest, nil
			}
			return source, nil
		}
	}})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "assistant", "S-42", nil); err != nil {
		t.Fatal(err)
	}
	c := uiClient(t)
	for q, want := range map[string]string{"S-42": "/ui/sessions/S-42", "chat:42": "/ui/sessions/S-42", " chat:42 ": "/ui/sessions/S-42"} {
		if p := get(t, c, f.http.URL+"/ui/?q="+url.QueryEscape(q)); p.status != http.StatusSeeOther || p.loc != want {
			t.Errorf("search %q: %d %q, want %s", q, p.status, p.loc, want)
		}
	}
	for _, q := range []string{"chat:43", "nope", "<b>x</b>"} {
		p := get(t, c, f.http.URL+"/ui/?q="+url.QueryEscape(q))
		if p.status != 200 || !strings.Contains(p.body, "No session "+template.HTMLEscapeString(q)+", nor one its source maps to.") {
			t.Errorf("search %q: %d, want the page saying no session", q, p.status)
		}
	}
}
