package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// The inspector: HTML pages served at /ui/ from files embedded in the
// binary, rendered with html/template (every value escaped), live parts by
// one small script (ui/static/app.js) over the server's SSE. No build
// step: change a template, rebuild the binary. docs/inspector.md.

//go:embed ui/templates/*.html ui/static/*
var uiFiles embed.FS

// uiCSP is the inspector's Content-Security-Policy: its own script and
// styles only, nothing inline, nothing from another origin, no frames.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// uiPage is what every page's template gets.
type uiPage struct {
	Title     string
	Nav       string // the current section: sessions, inbox
	CSRF      string
	Principal string
	SignedIn  bool // with keys: a sign-out button
	Error     string
	Data      any
}

type uiTemplates struct {
	pages map[string]*template.Template
}

func newUITemplates() (*uiTemplates, error) {
	funcs := template.FuncMap{
		"ago": uiAgo,
		// figure writes a figure in the fewest digits that say it
		// exactly (a count as a whole number).
		"figure":   func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
		"clock":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"iso":      func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"pretty":   uiPretty,
		"short":    uiShort,
		"statuses": func() []session.Status { return uiStatuses },
		"actions":  func() []string { return []string{"interrupt", "cancel", "resume"} },
		"title":    func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
		"cost": func(c float64) string {
			if c == 0 {
				return ""
			}
			return fmt.Sprintf("$%.4f", c)
		},
	}
	layout, err := fs.ReadFile(uiFiles, "ui/templates/layout.html")
	if err != nil {
		return nil, err
	}
	partials, err := fs.ReadFile(uiFiles, "ui/templates/partials.html")
	if err != nil {
		return nil, err
	}
	t := &uiTemplates{pages: map[string]*template.Template{}}
	for _, name := range []string{"sessions", "session", "inbox", "login", "rows", "sent", "diff", "runtime"} {
		body, err := fs.ReadFile(uiFiles, "ui/templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		tp := template.New(name).Funcs(funcs)
		if _, err := tp.Parse(string(layout)); err != nil {
			return nil, fmt.Errorf("ui: layout: %w", err)
		}
		if _, err := tp.Parse(string(partials)); err != nil {
			return nil, fmt.Errorf("ui: partials: %w", err)
		}
		if _, err := tp.Parse(string(body)); err != nil {
			return nil, fmt.Errorf("ui: %s: %w", name, err)
		}
		t.pages[name] = tp
	}
	return t, nil
}

// uiRoutes are the inspector's endpoints.
func (s *Server) uiRoutes() []Route {
	return []Route{
		{Method: "GET", Pattern: "/{$}", Public: true, h: s.uiHome},
		{Method: "GET", Pattern: "/ui/static/{file}", Public: true, h: s.uiStatic},
		{Method: "GET", Pattern: "/ui/login", Public: true, h: s.uiLoginPage},
		{Method: "POST", Pattern: "/ui/login", Public: true, ui: true, h: s.uiLogin},
		{Method: "POST", Pattern: "/ui/logout", ui: true, h: s.uiLogout},
		{Method: "GET", Pattern: "/ui/{$}", ui: true, h: s.uiSessions},
		{Method: "GET", Pattern: "/ui/sessions/{id}", ui: true, h: s.uiSession},
		{Method: "GET", Pattern: "/ui/sessions/{id}/events", ui: true, Stream: true, h: s.uiEvents},
		{Method: "GET", Pattern: "/ui/sessions/{id}/sent/{seq}", ui: true, h: s.uiSent},
		{Method: "POST", Pattern: "/ui/sessions", ui: true, h: s.uiCreate},
		{Method: "POST", Pattern: "/ui/sessions/{id}/messages", ui: true, h: s.uiSend},
		{Method: "POST", Pattern: "/ui/sessions/{id}/fork", ui: true, h: s.uiFork},
		{Method: "GET", Pattern: "/ui/diff", ui: true, h: s.uiDiff},
		{Method: "POST", Pattern: "/ui/sessions/{id}/requests/{rid}", ui: true, h: s.uiResolve},
		{Method: "POST", Pattern: "/ui/sessions/{id}/{action}", ui: true, h: s.uiControl},
		{Method: "GET", Pattern: "/ui/inbox", ui: true, h: s.uiInbox},
		{Method: "GET", Pattern: "/ui/runtime", ui: true, h: s.uiRuntime},
		{Method: "POST", Pattern: "/ui/rules/{agent}/{rule}/revoke", ui: true, h: s.uiRevoke},
	}
}

// uiHeaders are every inspector answer's.
func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// render writes page name with data, status code.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, p uiPage) {
	p.CSRF = s.ui.csrf(r)
	p.Principal = agentrt.ActorOf(r.Context())
	p.SignedIn = len(s.keys.keys) > 0 && p.Principal != ""
	var buf bytes.Buffer
	if err := s.uiT.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("ui: render", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	uiHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// uiRefuse answers a refused inspector request with a page that says why.
func (s *Server) uiRefuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if s.uiT == nil {
		http.Error(w, msg, code)
		return
	}
	s.render(w, r, code, "login", uiPage{Title: "Sign in", Error: msg, Data: uiLoginData{Keys: len(s.keys.keys) > 0, Next: "/ui/"}})
}

// uiFail renders err (an agentrt error: its status and sentence) on page
// name with data.
func (s *Server) uiFail(w http.ResponseWriter, r *http.Request, err error) {
	code, detail := statusOf(err)
	if code >= 500 {
		s.log.Error("ui", "path", r.URL.Path, "error", err)
	}
	s.render(w, r, code, "login", uiPage{Title: http.StatusText(code), Error: detail.Message, Data: uiLoginData{Next: "/ui/", Failed: true}})
}

func (s *Server) uiHome(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (s *Server) uiStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(uiFiles, "ui/static/"+name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	uiHeaders(w)
	w.Header().Set("Cache-Control", "public, max-age=300")
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	_, _ = w.Write(b)
}

// uiBack goes back to the page at path (with its fragment, if any) to show
// msg, a form's error — by the request rid, when given. The message is
// signed: a page shows only the errors this server wrote, never text a
// link of somebody else's put in the URL.
func (s *Server) uiBack(w http.ResponseWriter, r *http.Request, path, rid, msg string) {
	path, frag, _ := strings.Cut(path, "#")
	v := url.Values{"error": {msg}, "sig": {s.ui.flash(rid, msg)}}
	if rid != "" {
		v.Set("rid", rid)
	}
	if frag != "" {
		frag = "#" + frag
	}
	http.Redirect(w, r, path+"?"+v.Encode()+frag, http.StatusSeeOther)
}

// uiBackErr is uiBack with err's sentence.
func (s *Server) uiBackErr(w http.ResponseWriter, r *http.Request, path, rid string, err error) {
	_, detail := statusOf(err)
	s.uiBack(w, r, path, rid, detail.Message)
}

// uiFlash is the error a page was sent back with (uiBack), if this server
// signed it: the request it is about ("" for the page's own) and the text.
func (s *Server) uiFlash(r *http.Request) (rid, msg string) {
	q := r.URL.Query()
	rid, msg = q.Get("rid"), q.Get("error")
	if msg == "" || !hmac.Equal([]byte(q.Get("sig")), []byte(s.ui.flash(rid, msg))) {
		return "", ""
	}
	return rid, msg
}

// --- sign-in ---

type uiLoginData struct {
	Keys   bool // the server has keys: a form
	Next   string
	Failed bool // an error page, not the sign-in
}

func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if len(s.keys.keys) == 0 {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", uiPage{Title: "Sign in", Data: uiLoginData{Keys: true, Next: next}})
}

// uiLogin signs in with an API key: the key is checked, never stored;
// the cookie names its hash.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if len(s.keys.keys) == 0 {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	e := s.keys.find(strings.TrimSpace(r.PostFormValue("key")))
	if e == nil {
		s.render(w, r, http.StatusUnauthorized, "login", uiPage{Title: "Sign in", Error: "that is not one of this server's API keys",
			Data: uiLoginData{Keys: true, Next: next}})
		return
	}
	exp := s.now().Add(uiSessionTTL)
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: s.ui.cookie(e.hash, exp), Path: "/ui/", Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// --- sessions ---

type uiSessionRow struct {
	*session.Session
	Requests int // pending, for a waiting session
}

type uiSessionsData struct {
	Agents []string // for a new session
	Rows   []uiSessionRow
	Status string
	Agent  string // the agent filter
	Query  string
	Next   string // the query of the next page, "" when last
	Counts string
}

var uiStatuses = []session.Status{session.StatusIdle, session.StatusRunning, session.StatusWaiting, session.StatusPaused,
	session.StatusDone, session.StatusFailed, session.StatusCanceled, session.StatusInterrupted}

func (s *Server) uiSessions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("q")); id != "" {
		// A session's id, or a source's (the gateway's: a chat, a
		// channel), whose inputs go to the session it maps to.
		ids := []string{id}
		if sid, err := s.gw.SessionOf(id); err == nil && sid != id {
			ids = append(ids, sid)
		}
		for _, id := range ids {
			if _, err := s.store.GetSession(ctx, id); err == nil {
				http.Redirect(w, r, "/ui/sessions/"+url.PathEscape(id), http.StatusSeeOther)
				return
			}
		}
	}
	d := uiSessionsData{Status: q.Get("status"), Query: q.Get("q"), Agent: q.Get("agent"), Agents: s.r.AgentNames()}
	if d.Status != "" && !validStatus(session.Status(d.Status)) {
		s.uiFail(w, r, badRequest("status %q is not one of a session's", d.Status))
		return
	}
	opt := session.ListOptions{Limit: 50, After: q.Get("after"), Status: session.Status(d.Status), Agent: d.Agent, SkipHidden: true}
	if t := q.Get("after_created"); t != "" {
		us, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			s.uiFail(w, r, badRequest("after_created %q: want the microseconds the page's link gave", t))
			return
		}
		opt.AfterCreated = time.UnixMicro(us)
	}
	page, err := s.store.ListSessions(ctx, opt)
	if err != nil {
		s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "list the sessions", Err: err})
		return
	}
	for _, ss := range page {
		row := uiSessionRow{Session: ss}
		if ss.Status == session.StatusWaiting {
			if reqs, err := s.r.PendingRequests(ctx, session.RequestListOptions{SessionID: ss.ID, Limit: 100}); err == nil {
				row.Requests = len(reqs)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	if len(page) == opt.Limit {
		last := page[len(page)-1]
		v := url.Values{"after": {last.ID}, "after_created": {strconv.FormatInt(last.CreatedAt.UnixMicro(), 10)}}
		if d.Status != "" {
			v.Set("status", d.Status)
		}
		if d.Agent != "" {
			v.Set("agent", d.Agent)
		}
		d.Next = "/ui/?" + v.Encode()
	}
	name := "sessions"
	if q.Get("fragment") == "rows" {
		name = "rows" // the table's rows alone, for the page's live refresh
	}
	s.render(w, r, http.StatusOK, name, uiPage{Title: "Sessions", Nav: "sessions", Data: d})
}

func validStatus(st session.Status) bool {
	for _, s := range uiStatuses {
		if s == st {
			return true
		}
	}
	return false
}

// --- one session ---

// uiRow is one event of a session's timeline.
type uiRow struct {
	Seq     int64
	Turn    int
	Time    time.Time
	Type    string
	Title   string   // what happened, in a few words
	Facts   []string // model, latency, tokens…
	Body    string   // text: a reply, arguments, a result
	Error   string
	Raw     string // the event's JSON, pretty
	NewTurn bool   // the first row of its turn
	Round   bool   // a round begins
	Sent    string // a model call's "what the model was sent" page
	Child   string // a sub-agent's session
	// Nested is the sub-agent's timeline, under the row that started it.
	Nested *uiNested
}

// uiNested is a sub-agent's session's timeline, shown within its
// parent's: its first events, with a link to the rest.
type uiNested struct {
	ID    string
	Rows  []uiRow
	More  bool  // there are more events than Rows
	Total int64 // the events of the session
}

// A session's page nests the timelines of the sub-agents its rows start,
// the first uiNestedEvents events of each, for its first uiNestedChildren
// sub-agents; the others, and a sub-agent's own sub-agents, are linked.
const (
	uiNestedEvents   = 200
	uiNestedChildren = 20
)

// uiNestedOf reads sub-agent session id's timeline to nest; nil when the
// session is gone (deleted, or of another tenant).
func (s *Server) uiNestedOf(ctx context.Context, id string) (*uiNested, error) {
	ss, err := s.store.GetSession(ctx, id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	n := &uiNested{ID: id, Total: ss.LastSeq}
	for ev, err := range s.store.Events(ctx, id, 0) {
		if err != nil {
			return nil, err
		}
		if len(n.Rows) == uiNestedEvents {
			n.More = true
			break
		}
		n.Rows = append(n.Rows, uiEventRow(ev))
	}
	return n, nil
}

type uiSessionData struct {
	S        *session.Session
	Rows     []uiRow
	Requests []uiRequest
	From     int64 // the first seq shown; older ones on the page before
	Older    string
	Lease    string
	Queued   *Queued
	// Models are the models a fork may change to (the agent's own
	// first); Model the one it uses.
	Models []string
	Model  string
	Note   string // what the last form did
	Error  string // what the last form could not do
}

// uiWindow is how many events a session's page shows at once: the newest,
// with a link to the ones before.
const uiWindow = 500

func (s *Server) uiSession(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	ss, err := s.getSessionRow(ctx, id)
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	d := uiSessionData{S: ss, Note: uiNotes[r.URL.Query().Get("note")]}
	d.Model, d.Models = s.uiModels(ss.Agent)
	if rid, msg := s.uiFlash(r); rid == "" {
		d.Error = msg
	}
	before := ss.LastSeq + 1
	if b := r.URL.Query().Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			s.uiFail(w, r, badRequest("before %q: want an event's seq", b))
			return
		}
		before = min(n, before)
	}
	after := max(0, before-1-uiWindow)
	d.From = after + 1
	if after > 0 {
		d.Older = "/ui/sessions/" + url.PathEscape(id) + "?before=" + strconv.FormatInt(after+1, 10)
	}
	turn := -1
	for ev, err := range s.store.Events(ctx, id, after) {
		if err != nil {
			s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session's events", Err: err})
			return
		}
		if ev.Seq >= before {
			break
		}
		row := uiEventRow(ev)
		if ev.Turn != turn {
			row.NewTurn, turn = true, ev.Turn
		}
		d.Rows = append(d.Rows, row)
	}
	children := 0
	for i := range d.Rows {
		row := &d.Rows[i]
		if row.Type != string(session.TypeSubagentStarted) || row.Child == "" || children == uiNestedChildren {
			continue
		}
		children++
		if row.Nested, err = s.uiNestedOf(ctx, row.Child); err != nil {
			s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the sub-agent's events", Err: err})
			return
		}
	}
	if l := ss.Lease; l != nil {
		state := "until"
		if !l.Expires.After(s.now()) {
			state = "expired"
		}
		d.Lease = fmt.Sprintf("%s, token %d, %s %s", l.Owner, l.Token, state, l.Expires.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if src, err := s.gw.Source(ctx, id); err == nil && src.Pending > 0 {
		d.Queued = &Queued{Inputs: src.Pending, Bytes: src.Bytes, Since: src.First}
	}
	if ss.Status == session.StatusWaiting {
		reqs, err := s.r.PendingRequests(ctx, session.RequestListOptions{SessionID: id, Limit: 100})
		if err != nil {
			s.uiFail(w, r, err)
			return
		}
		d.Requests = s.uiRequests(r, "session", reqs)
	}
	s.render(w, r, http.StatusOK, "session", uiPage{Title: "Session " + id, Nav: "sessions", Data: d})
}

// uiEventRow describes ev for the timeline.
func uiEventRow(ev *session.Event) uiRow {
	row := uiRow{Seq: ev.Seq, Turn: ev.Turn, Time: ev.Time, Type: string(ev.Type), Title: strings.ReplaceAll(string(ev.Type), "_", " ")}
	if b, err := ev.AppendJSON(nil); err == nil {
		row.Raw = uiPretty(b)
	}
	switch d := ev.Data.(type) {
	case *session.RunStarted:
		row.Title, row.Body = "run started", d.Input
		if d.Source != "" {
			row.Facts = append(row.Facts, "source "+d.Source)
		}
	case *session.ModelStarted:
		row.Title = "model called"
		row.Facts = append(row.Facts, cmp.Or(d.Model, "model"))
		if d.Attempt > 1 {
			row.Facts = append(row.Facts, fmt.Sprintf("attempt %d", d.Attempt))
		}
		if d.Purpose != "" {
			row.Facts = append(row.Facts, "for "+d.Purpose)
		}
		row.Sent = "/ui/sessions/" + url.PathEscape(ev.SessionID) + "/sent/" + strconv.FormatInt(ev.Seq, 10)
	case *session.ModelFinished:
		row.Title = "model replied"
		row.Facts = append(row.Facts, cmp.Or(d.Model, "model"), fmt.Sprintf("%d ms", d.LatencyMS),
			fmt.Sprintf("%d in / %d out tokens", d.Usage.InputTokens, d.Usage.OutputTokens), "finish "+string(d.FinishReason))
		if d.Usage.CostUSD > 0 {
			row.Facts = append(row.Facts, fmt.Sprintf("$%.4f", d.Usage.CostUSD))
		}
		row.Body = d.Content
		for _, c := range d.ToolCalls {
			row.Body += fmt.Sprintf("\n→ %s %s", c.Name, uiShort(string(c.Arguments), 400))
		}
		row.Body = strings.TrimSpace(row.Body)
	case *session.ToolCall:
		row.Title = "tool " + d.Name
		row.Facts = append(row.Facts, "call "+d.CallID, "idempotency key "+tool.IdempotencyKey(ev.SessionID, d.CallID))
		if d.Attempt > 1 {
			row.Facts = append(row.Facts, fmt.Sprintf("attempt %d", d.Attempt))
		}
		if d.Rule != "" {
			row.Facts = append(row.Facts, "by rule "+d.Rule)
		}
		row.Body = uiPretty(d.Arguments)
		row.Error = d.Blocked
	case *session.ToolResult:
		row.Title = "tool " + d.Name + " returned"
		row.Facts = append(row.Facts, fmt.Sprintf("%d ms", d.LatencyMS))
		if d.OK {
			row.Body = uiPretty(d.Result)
		} else {
			row.Error = cmp.Or(d.Error, "failed")
		}
	case *session.InputRequired:
		row.Title = "asked a person: " + string(d.Kind)
		row.Body = d.Question
	case *session.InputResolved:
		row.Title = "answered: " + d.Decision
		if d.By != "" {
			row.Facts = append(row.Facts, "by "+d.By)
		}
		if d.Reason != "" {
			row.Facts = append(row.Facts, d.Reason)
		}
		if d.Rule != nil {
			row.Facts = append(row.Facts, "always, "+d.Rule.Scope)
		}
		row.Body = strings.TrimSpace(d.Text + " " + strings.Join(d.Selected, ", ") + " " + uiPretty(d.Arguments) + " " + uiPretty(d.Result))
	case *session.Final:
		row.Title, row.Body = "answer", d.Text
	case *session.RunFinished:
		row.Title = "run " + string(d.Status)
		row.Facts = append(row.Facts, fmt.Sprintf("%d in / %d out tokens", d.Usage.InputTokens, d.Usage.OutputTokens))
		if d.Reason != "" {
			row.Facts = append(row.Facts, d.Reason)
		}
	case *session.Interrupted:
		row.Title, row.Body = "interrupted", d.Reason
		if d.MergedInputs > 0 {
			row.Facts = append(row.Facts, fmt.Sprintf("%d inputs merged", d.MergedInputs))
		}
	case *session.Control:
		row.Title = "control: " + string(d.Kind)
		row.Body = d.Reason
		if d.By != "" {
			row.Facts = append(row.Facts, "by "+d.By)
		}
	case *session.Error:
		row.Title, row.Error = "error "+d.Code, d.Message
	case *session.RunResumed:
		row.Title = "run resumed"
		row.Facts = append(row.Facts, d.Reason, "from "+string(d.From))
	case *session.RoundStarted:
		row.Round = true
		if d.MaxRounds > 0 {
			row.Facts = append(row.Facts, fmt.Sprintf("round %d of %d", d.Round, d.MaxRounds))
		}
	case *session.LoopWarning:
		row.Title, row.Error = "loop warning: "+d.Detector, d.Detail
		row.Facts = append(row.Facts, fmt.Sprintf("%d of %d", d.Count, d.Threshold))
	case *session.Compaction:
		row.Title = "history compacted"
		row.Facts = append(row.Facts, fmt.Sprintf("%d messages summarised", d.CompactedCount), d.Reason)
		row.Body, row.Error = d.Summary, d.Error
	case *session.SubagentStarted:
		row.Title = "sub-agent " + d.Agent + " started"
		row.Body, row.Child = d.Task, d.ChildSession
	case *session.SubagentFinished:
		row.Title = "sub-agent answered"
		row.Body, row.Child = d.Answer, d.ChildSession
	case *session.SubagentError:
		row.Title, row.Child = "sub-agent failed", d.ChildSession
		if b, err := json.Marshal(d); err == nil {
			row.Error = string(b)
		}
	case *session.PlanCreated:
		row.Title, row.Body = "plan made", uiPretty(d.Plan)
		row.Facts = append(row.Facts, "by "+d.Source)
	case *session.PlanStepStarted:
		row.Title = fmt.Sprintf("plan step %d: %s", d.Index+1, d.Kind)
		row.Body = strings.TrimSpace(d.Tool + " " + d.Task)
	case *session.PlanStepFinished:
		row.Title = fmt.Sprintf("plan step %d %s", d.Index+1, d.Status)
		if d.Observation.OK {
			row.Body = uiPretty(d.Observation.Result)
		} else {
			row.Error = d.Observation.Error
		}
	case *session.ModelChanged:
		row.Title = "model changed to " + d.Model
		if d.Was != "" {
			row.Facts = append(row.Facts, "was "+d.Was)
		}
	case *session.InputSteered:
		row.Title, row.Body = "input steered into the turn", d.Text
	case *session.RuleAdded:
		row.Title = "standing decision: " + d.Rule.Decision + " " + d.Rule.Tool
		row.Facts = append(row.Facts, d.Rule.Scope, "by "+d.Rule.By)
	case *session.RuleRevoked:
		row.Title = "standing decision revoked"
		row.Facts = append(row.Facts, "by "+d.By)
		row.Body = d.Reason
	}
	return row
}

// --- the playground: a new session, a message, a fork ---

// uiNotes are what the page says a form did, by the note its redirect
// names (never text from the URL itself).
var uiNotes = map[string]string{
	"created":   "The session is made: send it a message below.",
	"sent":      "Sent: a turn answers it (the timeline follows it).",
	"interrupt": "Sent while a turn ran: by its source's policy (interrupt) that turn stops at its next safe point and starts again with your message.",
	"queue":     "Sent while a turn ran: by its source's policy (queue) it waits for that turn to end, and the next turn answers it.",
	"steer":     "Sent while a turn ran: by its source's policy (steer) the running turn's next model call reads it.",
	"duplicate": "That message was sent before: nothing new was sent.",
	"forked":    "This session is a fork: the log of the session it came from, up to the event chosen. Send it a message to take it another way, then compare the two.",
}

// uiCreate makes a session of the agent chosen (and the id given, if any).
func (s *Server) uiCreate(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.PostFormValue("id"))
	if id != "" {
		if err := session.CheckID(id); err != nil {
			s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadSessionID, Msg: err.Error()})
			return
		}
	}
	ss, err := s.r.CreateSession(r.Context(), r.PostFormValue("agent"), id, nil)
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/sessions/"+url.PathEscape(ss.ID)+"?note=created#send", http.StatusSeeOther)
}

// uiSend gives a message to the session through the gateway, as the API
// does: the source's policy applies to a message sent while a turn runs,
// and the page says what it did.
func (s *Server) uiSend(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	back := "/ui/sessions/" + url.PathEscape(id)
	ss, err := s.getSessionRow(ctx, id)
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	text := strings.TrimSpace(r.PostFormValue("text"))
	if text == "" {
		s.uiBack(w, r, back+"#send", "", "the message is empty")
		return
	}
	source := cmp.Or(strings.TrimSpace(r.PostFormValue("source")), id)
	sub, err := s.gw.Submit(ctx, gateway.Input{Source: source, Session: id, Agent: ss.Agent, Text: text,
		Key: r.PostFormValue("key")})
	if err != nil {
		s.uiBackErr(w, r, back+"#send", "", err)
		return
	}
	note := "sent"
	switch {
	case sub.Duplicate:
		note = "duplicate"
	case ss.Status == session.StatusRunning:
		note = string(s.gw.PolicyOf(source, ss.Agent))
	}
	http.Redirect(w, r, back+"?note="+note, http.StatusSeeOther)
}

// uiModels are the model an agent uses and the models its sessions may
// change to (a fork's choice): its own first.
func (s *Server) uiModels(agent string) (string, []string) {
	a, ok := s.r.Agent(agent)
	if !ok || a.Model == nil {
		return "", nil
	}
	own := a.Model.Name()
	out := []string{own}
	if a.Models != nil {
		for _, n := range a.Models.Names() {
			if n != own {
				out = append(out, n)
			}
		}
	}
	return own, out
}

// uiFork forks the session at an event into a new session, and goes to it.
func (s *Server) uiFork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	at, err := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("at")), 10, 64)
	if err != nil || at < 0 {
		s.uiBack(w, r, "/ui/sessions/"+url.PathEscape(id), "", "fork at: want an event's seq")
		return
	}
	model := strings.TrimSpace(r.PostFormValue("model"))
	ss, err := s.r.Fork(r.Context(), id, at, agentrt.ForkOptions{Model: model})
	if err != nil {
		s.uiBackErr(w, r, "/ui/sessions/"+url.PathEscape(id), "", err)
		return
	}
	http.Redirect(w, r, "/ui/sessions/"+url.PathEscape(ss.ID)+"?note=forked", http.StatusSeeOther)
}

// uiDiffRow is one seq of two sessions' logs, side by side.
type uiDiffRow struct {
	Seq   int64
	A, B  *uiRow
	Same  bool
	First bool // the first row that differs
}

type uiDiffData struct {
	A, B  string
	Rows  []uiDiffRow
	First int64 // the seq of the first difference, 0 for none
}

// maxDiffEvents bounds a diff: the first events of each log.
const maxDiffEvents = 2000

// uiDiff shows two sessions' logs side by side, seq by seq, and marks the
// first event that differs (its type and payload; times, run ids and the
// session's id do not count).
func (s *Server) uiDiff(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	a, b := q.Get("a"), q.Get("b")
	logs := [2][]*session.Event{}
	for i, id := range []string{a, b} {
		if _, err := s.getSessionRow(ctx, id); err != nil {
			s.uiFail(w, r, err)
			return
		}
		for ev, err := range s.store.Events(ctx, id, 0) {
			if err != nil {
				s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session's events", Err: err})
				return
			}
			if len(logs[i]) == maxDiffEvents {
				break
			}
			logs[i] = append(logs[i], ev)
		}
	}
	d := uiDiffData{A: a, B: b}
	for i := range max(len(logs[0]), len(logs[1])) {
		row := uiDiffRow{Seq: int64(i + 1)}
		var ea, eb *session.Event
		if i < len(logs[0]) {
			ea = logs[0][i]
			x := uiEventRow(ea)
			row.A = &x
		}
		if i < len(logs[1]) {
			eb = logs[1][i]
			x := uiEventRow(eb)
			row.B = &x
		}
		row.Same = ea != nil && eb != nil && sameEvent(ea, eb)
		if !row.Same && d.First == 0 {
			row.First, d.First = true, row.Seq
		}
		d.Rows = append(d.Rows, row)
	}
	s.render(w, r, http.StatusOK, "diff", uiPage{Title: "Compare " + a + " and " + b, Nav: "sessions", Data: d})
}

// sameEvent reports whether two events say the same: type and payload.
func sameEvent(a, b *session.Event) bool {
	if a.Type != b.Type {
		return false
	}
	ja, err1 := json.Marshal(a.Data)
	jb, err2 := json.Marshal(b.Data)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// --- the runtime's own mechanics ---

type uiSource struct {
	session.SourceState
	Policy   string
	Debounce time.Duration
	Settles  time.Time // when its inputs have settled (debounce), zero without one
	Serving  bool
	Worker   bool // waiting for a free worker
}

type uiRule struct {
	Agent string
	session.Rule
	Action string
}

type uiRuntimeData struct {
	Owner      string
	Store      string // "" when it takes writes, else why not
	Busy       int
	Waiting    int
	Serving    int
	Sources    []uiSource
	Running    []*session.Session
	Waitingfor []*session.Session
	Rules      []uiRule
	Recover    []*session.Session // running, with their lease expired: the sweep resumes them
	// Figures are the headline figures of this process's metrics
	// (Config.Headline); FiguresErr why they could not be read.
	Figures    []Figure
	FiguresErr string
	Note       string
}

// uiRuntime shows what no other page does: this process and its store's
// health, the gateway's sources with pending inputs (policy, debounce,
// who serves them), the sessions that are running or waiting with who
// holds their lease and until when, and the agents' standing decisions.
func (s *Server) uiRuntime(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenant := session.TenantOf(ctx)
	d := uiRuntimeData{Owner: s.r.Owner(), Busy: s.gw.Busy(), Waiting: s.gw.Waiting(), Serving: s.gw.Serving()}
	if err := s.r.WriteFailure(); err != nil {
		_, detail := statusOf(err)
		d.Store = detail.Message
	}
	states, err := s.gw.Pending(ctx)
	if err != nil {
		s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the inbox", Err: err})
		return
	}
	for _, st := range states {
		if st.Tenant != tenant {
			continue // every tenant's are listed; a person sees their own
		}
		set := s.gw.Settings(st.Source, "")
		src := uiSource{SourceState: st, Policy: string(s.gw.PolicyOf(st.Source, "")), Debounce: set.Debounce}
		if set.Debounce > 0 {
			src.Settles = st.Last.Add(set.Debounce)
		}
		if status, err := s.gw.Source(ctx, st.Source); err == nil {
			src.Serving, src.Worker = status.Serving, status.WaitingForWorker
		}
		d.Sources = append(d.Sources, src)
	}
	for _, st := range []session.Status{session.StatusRunning, session.StatusWaiting} {
		page, err := s.store.ListSessions(ctx, session.ListOptions{Status: st, Limit: 100, SkipHidden: true})
		if err != nil {
			s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "list the sessions", Err: err})
			return
		}
		if st == session.StatusRunning {
			d.Running = page
		} else {
			d.Waitingfor = page
		}
	}
	if li, ok := s.store.(session.LeaseIndex); ok {
		// Every tenant's are listed: a person sees their own.
		expired, err := li.ExpiredLeases(ctx, nil, 200)
		if err != nil {
			s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "list the expired leases", Err: err})
			return
		}
		for _, ss := range expired {
			if ss.Tenant == tenant {
				d.Recover = append(d.Recover, ss)
			}
		}
	}
	for _, agent := range s.r.AgentNames() {
		rules, err := s.r.AgentRules(ctx, agent)
		if err != nil {
			s.uiFail(w, r, err)
			return
		}
		for _, rule := range rules {
			d.Rules = append(d.Rules, uiRule{Agent: agent, Rule: rule,
				Action: "/ui/rules/" + url.PathEscape(agent) + "/" + url.PathEscape(rule.ID) + "/revoke"})
		}
	}
	if s.cfg.Headline != nil {
		if d.Figures, err = s.cfg.Headline(); err != nil {
			d.FiguresErr = err.Error()
		}
	}
	if r.URL.Query().Get("note") == "revoked" {
		d.Note = "The decision is revoked: the agent's next calls of the tool ask again."
	}
	_, flash := s.uiFlash(r)
	s.render(w, r, http.StatusOK, "runtime", uiPage{Title: "Runtime", Nav: "runtime", Error: flash, Data: d})
}

// uiRevoke ends one of an agent's standing decisions.
func (s *Server) uiRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	reason := cmp.Or(strings.TrimSpace(r.PostFormValue("reason")), "revoked in the inspector")
	if err := s.r.RevokeAgentRule(ctx, r.PathValue("agent"), r.PathValue("rule"), agentrt.ActorOf(ctx), reason); err != nil {
		s.uiBackErr(w, r, "/ui/runtime", "", err)
		return
	}
	http.Redirect(w, r, "/ui/runtime?note=revoked", http.StatusSeeOther)
}

// --- what a model was sent ---

type uiSentMessage struct {
	Role, Name, CallID, Text string
	Calls                    []uiCall
	Error                    bool
}

type uiSentTool struct {
	Name, Description, Schema string
}

type uiSentData struct {
	Sent     *agentrt.SentRequest
	Back     string
	System   string
	Messages []uiSentMessage
	Tools    []uiSentTool
	Params   []string
	Wire     string
}

// uiSent shows what a model call was sent: the request derived from the
// log as the call built it, and the provider's body for it
// (Runner.SentRequest).
func (s *Server) uiSent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		s.uiFail(w, r, badRequest("%q is not an event's seq", r.PathValue("seq")))
		return
	}
	sent, err := s.r.SentRequest(r.Context(), id, seq)
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	req := sent.Request
	d := uiSentData{Sent: sent, Back: "/ui/sessions/" + url.PathEscape(id) + "#ev-" + strconv.FormatInt(seq, 10), System: req.System, Wire: uiPretty(sent.Wire)}
	for _, m := range req.Messages {
		sm := uiSentMessage{Role: string(m.Role), Name: m.Name, CallID: m.ToolCallID, Text: m.Text(), Error: m.IsError}
		for _, c := range m.ToolCalls {
			sm.Calls = append(sm.Calls, uiCall{Name: c.Name, ID: c.ID, Args: uiPretty(c.Arguments)})
		}
		d.Messages = append(d.Messages, sm)
	}
	for _, t := range req.Tools {
		d.Tools = append(d.Tools, uiSentTool{Name: t.Name, Description: t.Description, Schema: uiPretty(t.InputSchema)})
	}
	if req.MaxTokens > 0 {
		d.Params = append(d.Params, fmt.Sprintf("max_tokens %d", req.MaxTokens))
	}
	if req.Temperature != nil {
		d.Params = append(d.Params, fmt.Sprintf("temperature %g", *req.Temperature))
	}
	if req.ToolChoice.Mode != "" {
		d.Params = append(d.Params, "tool_choice "+string(req.ToolChoice.Mode))
	}
	if req.ResponseFormat != nil {
		d.Params = append(d.Params, "a response format")
	}
	s.render(w, r, http.StatusOK, "sent", uiPage{Title: fmt.Sprintf("What the model was sent (event %d)", seq), Nav: "sessions", Data: d})
}

// --- requests ---

// uiRequest is a pending request as a page shows it, with its form.
type uiRequest struct {
	SessionID string
	Agent     string
	Asked     time.Time
	Req       session.InputRequired
	Calls     []uiCall
	Known     bool   // a kind the page has a form for
	Raw       string // the request's JSON
	Error     string // the last answer's error, shown in place
	Action    string // the form's URL
	CSRF      string
	Back      string // the page the form goes back to: inbox, or the session's
}

type uiCall struct {
	Name, ID, Args string
	// Fields are a form of the call's arguments, one field a property,
	// generated from the tool's JSON schema when every property is a
	// string, a number, an integer, a boolean or an enum; else none, and
	// the arguments are edited as JSON.
	Fields []uiField
}

// uiField is one argument of a call as a form field.
type uiField struct {
	Name, Type, Description string
	Enum                    []string
	Required                bool
	Value                   string // the call's value, as text
	Checked                 bool   // a boolean's
}

// uiSchemaFields generates the fields of a tool's input schema filled with
// args, or nil when the schema is not a flat object of simple properties.
func uiSchemaFields(schema, args json.RawMessage) []uiField {
	var sc struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        any               `json:"type"`
			Description string            `json:"description"`
			Enum        []json.RawMessage `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &sc) != nil || sc.Type != "object" || len(sc.Properties) == 0 {
		return nil
	}
	var vals map[string]json.RawMessage
	_ = json.Unmarshal(args, &vals)
	var out []uiField
	for name, p := range sc.Properties {
		t, _ := p.Type.(string)
		f := uiField{Name: name, Type: t, Description: p.Description}
		switch t {
		case "string", "number", "integer", "boolean":
		default:
			return nil
		}
		for _, e := range p.Enum {
			var v string
			if json.Unmarshal(e, &v) != nil {
				return nil // enums of strings only
			}
			f.Enum = append(f.Enum, v)
		}
		for _, r := range sc.Required {
			f.Required = f.Required || r == name
		}
		if raw, ok := vals[name]; ok {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				f.Value = str
			} else {
				f.Value = string(raw)
			}
			f.Checked = string(raw) == "true"
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b uiField) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// uiFieldArgs builds a call's arguments from its form's fields (arg.NAME,
// typed by type.NAME): what is not of its type is said, by name.
func uiFieldArgs(form url.Values) (json.RawMessage, error) {
	args := map[string]any{}
	for key, vs := range form {
		name, ok := strings.CutPrefix(key, "type.")
		if !ok {
			continue
		}
		v := strings.TrimSpace(form.Get("arg." + name))
		switch vs[0] {
		case "boolean":
			args[name] = v == "on" || v == "true"
			continue
		case "integer":
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a whole number", name, v)
			}
			args[name] = n
		case "number":
			if v == "" {
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number", name, v)
			}
			args[name] = n
		default:
			if v == "" && form.Get("required."+name) == "" {
				continue
			}
			args[name] = v
		}
	}
	return json.Marshal(args)
}

func (s *Server) uiRequests(r *http.Request, back string, page []session.PendingRequest) []uiRequest {
	errRID, errMsg := s.uiFlash(r)
	token := s.ui.csrf(r)
	var out []uiRequest
	for _, p := range page {
		q := uiRequest{SessionID: p.SessionID, Agent: p.Agent, Asked: p.Asked, Req: p.Request, CSRF: token, Back: back,
			Action: "/ui/sessions/" + url.PathEscape(p.SessionID) + "/requests/" + url.PathEscape(p.Request.RequestID)}
		specs := map[string]json.RawMessage{}
		if a, ok := s.r.Agent(p.Agent); ok {
			for _, t := range a.ToolSpecs() {
				specs[t.Name] = t.InputSchema
			}
		}
		for _, c := range p.Request.Calls {
			uc := uiCall{Name: c.Name, ID: c.ID, Args: uiPretty(c.Arguments)}
			if p.Request.Kind == session.RequestApproval && len(p.Request.Calls) == 1 {
				uc.Fields = uiSchemaFields(specs[c.Name], c.Arguments)
			}
			q.Calls = append(q.Calls, uc)
		}
		switch p.Request.Kind {
		case session.RequestApproval, session.RequestPrompt, session.RequestSelect, session.RequestConfirm:
			q.Known = true
		}
		if b, err := json.Marshal(p.Request); err == nil {
			q.Raw = uiPretty(b)
		}
		if errRID != "" && errRID == p.Request.RequestID {
			q.Error = errMsg
		}
		out = append(out, q)
	}
	return out
}

type uiInboxData struct {
	Requests []uiRequest
	IDs      []string // the requests', for the page to see the inbox change
}

func (s *Server) uiInbox(w http.ResponseWriter, r *http.Request) {
	page, err := s.r.PendingRequests(r.Context(), session.RequestListOptions{Limit: 200})
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	if r.URL.Query().Get("fragment") == "ids" {
		// What the page polls to see the inbox change: the requests' ids.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		for _, p := range page {
			fmt.Fprintln(w, p.SessionID+"/"+p.Request.RequestID)
		}
		return
	}
	d := uiInboxData{Requests: s.uiRequests(r, "inbox", page)}
	for _, p := range page {
		d.IDs = append(d.IDs, p.SessionID+"/"+p.Request.RequestID)
	}
	s.render(w, r, http.StatusOK, "inbox", uiPage{Title: "Inbox", Nav: "inbox", Data: d})
}

// uiResolve answers a request from its form, then goes back to the page
// the form was on: the answer's error, if any, shown by the request.
func (s *Server) uiResolve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, rid := r.PathValue("id"), r.PathValue("rid")
	back := "/ui/sessions/" + url.PathEscape(id)
	if r.PostFormValue("back") == "inbox" {
		back = "/ui/inbox"
	}
	res := agentrt.Resolution{Decision: r.PostFormValue("decision"), Text: r.PostFormValue("text"), Reason: r.PostFormValue("reason"),
		Selected: r.PostForm["selected"], By: agentrt.ActorOf(ctx)}
	if r.PostFormValue("fields") != "" {
		a, err := uiFieldArgs(r.PostForm)
		if err != nil {
			s.uiBack(w, r, back, rid, err.Error())
			return
		}
		res.Arguments = a
	} else if a := strings.TrimSpace(r.PostFormValue("arguments")); a != "" {
		if !json.Valid([]byte(a)) {
			s.uiBack(w, r, back, rid, "the arguments are not JSON")
			return
		}
		res.Arguments = json.RawMessage(a)
	}
	if a := strings.TrimSpace(r.PostFormValue("result")); a != "" {
		if !json.Valid([]byte(a)) {
			s.uiBack(w, r, back, rid, "the result is not JSON")
			return
		}
		res.Result = json.RawMessage(a)
	}
	if scope := r.PostFormValue("always"); scope != "" {
		res.Always = &agentrt.Always{Scope: scope}
	}
	if _, err := s.r.ResolveAndContinue(ctx, id, rid, res); err != nil {
		s.uiBackErr(w, r, back, rid, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// uiControl cancels, interrupts or resumes a session from its page.
func (s *Server) uiControl(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	reason := cmp.Or(strings.TrimSpace(r.PostFormValue("reason")), "from the inspector")
	var err error
	switch r.PathValue("action") {
	case "cancel":
		_, err = s.r.Cancel(ctx, id, reason)
	case "interrupt":
		_, err = s.r.Interrupt(ctx, id, reason)
	case "resume":
		_, err = s.r.StartResume(ctx, id)
	case "delete":
		// Confirmed by typing the session's id: a session's log is gone
		// with it.
		if r.PostFormValue("confirm") != id {
			err = badRequest("type the session's id to delete it")
			break
		}
		if err = s.r.DeleteSession(ctx, id, false); err == nil {
			http.Redirect(w, r, "/ui/", http.StatusSeeOther)
			return
		}
	default:
		s.uiFail(w, r, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeNotFound, Msg: "no such action: " + r.PathValue("action")})
		return
	}
	back := "/ui/sessions/" + url.PathEscape(id)
	if err != nil {
		s.uiBackErr(w, r, back, "", err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// uiEvents is the session's SSE stream for its page's script: the API's
// (resumable from Last-Event-ID), authenticated by the inspector's sign-in.
func (s *Server) uiEvents(w http.ResponseWriter, r *http.Request) {
	if !wantsSSE(r) {
		s.uiFail(w, r, badRequest("this is an event stream: ask for text/event-stream"))
		return
	}
	s.getEvents(w, r)
}

// --- helpers ---

func uiAgo(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.UTC().Format("2006-01-02")
}

// uiPretty indents JSON; anything else as it is.
func uiPretty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return string(b)
	}
	return buf.String()
}

func uiShort(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
