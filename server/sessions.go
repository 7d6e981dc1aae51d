package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

func (s *Server) routes() []Route {
	return []Route{
		{Method: "GET", Pattern: "/healthz", Public: true, h: s.healthz},
		{Method: "GET", Pattern: "/readyz", Public: true, h: s.readyz},
		{Method: "GET", Pattern: "/openapi.json", Public: true, h: s.openAPI},
		{Method: "GET", Pattern: "/v1/agents", h: s.listAgents},
		{Method: "POST", Pattern: "/v1/sessions", h: s.createSession},
		{Method: "GET", Pattern: "/v1/sessions", h: s.listSessions},
		{Method: "GET", Pattern: "/v1/sessions/{id}", h: s.getSession},
		{Method: "DELETE", Pattern: "/v1/sessions/{id}", h: s.deleteSession},
		{Method: "POST", Pattern: "/v1/sessions/{id}/messages", Stream: true, streams: wantsSSE, h: s.postMessage},
		{Method: "GET", Pattern: "/v1/sessions/{id}/events", Stream: true, streams: wantsSSE, h: s.getEvents},
		{Method: "GET", Pattern: "/v1/sessions/{id}/events/{seq}/sent", h: s.getSent},
		{Method: "POST", Pattern: "/v1/sessions/{id}/requests/{rid}", h: s.resolve},
		{Method: "POST", Pattern: "/v1/sessions/{id}/cancel", h: s.control(false)},
		{Method: "POST", Pattern: "/v1/sessions/{id}/interrupt", h: s.control(true)},
		{Method: "POST", Pattern: "/v1/sessions/{id}/resume", h: s.resume},
		{Method: "POST", Pattern: "/v1/sessions/{id}/fork", h: s.fork},
		{Method: "GET", Pattern: "/v1/requests", h: s.listRequests},
		{Method: "GET", Pattern: "/v1/ws", Stream: true, h: s.serveWS},
	}
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	var err error
	switch {
	case s.draining.Load():
		err = errors.New("shutting down")
	case s.r.WriteFailure() != nil:
		// The runner's knowledge, not a probe: it tries writes itself
		// until the store accepts one (the reason is its sentence, not
		// the store's wording).
		err = s.r.WriteFailure()
	case s.cfg.Ready != nil:
		err = s.cfg.Ready(ctx)
	default:
		_, err = s.store.ListSessions(session.WithTenant(ctx, s.cfg.Tenant), session.ListOptions{Limit: 1})
	}
	if err != nil {
		// The reason in words of the server's; a store's own (its
		// driver's, its address) go to the log.
		reason := "shutting down"
		if !s.draining.Load() {
			if reason = publicMessage(err); reason == "" {
				reason = "the store did not answer"
			}
			s.log.LogAttrs(ctx, slog.LevelWarn, "not ready", slog.String("error", err.Error()))
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": reason})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// AgentInfo is an agent as GET /v1/agents shows it.
type AgentInfo struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Default     bool       `json:"default,omitempty"`
	Model       string     `json:"model,omitempty"`
	Tools       []ToolInfo `json:"tools"`
}

// ToolInfo is a tool an agent may call.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	def, _ := s.r.DefaultAgent()
	out := struct {
		Agents []AgentInfo `json:"agents"`
	}{Agents: []AgentInfo{}}
	for _, name := range s.r.AgentNames() {
		a, _ := s.r.Agent(name)
		info := AgentInfo{Name: name, Description: a.Description, Default: name == def, Tools: []ToolInfo{}}
		if a.Model != nil {
			info.Model = a.Model.Name()
		}
		for _, t := range a.ToolSpecs() {
			info.Tools = append(info.Tools, toolInfo(t))
		}
		out.Agents = append(out.Agents, info)
	}
	writeJSON(w, http.StatusOK, out)
}

func toolInfo(t model.ToolSpec) ToolInfo {
	return ToolInfo{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}
}

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID        string            `json:"id"`
	Agent     string            `json:"agent"`
	Status    session.Status    `json:"status"`
	Turn      int               `json:"turn"`
	Usage     model.Usage       `json:"usage"`
	LastSeq   int64             `json:"last_seq"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	// Requests are the requests waiting for a person (GET of one
	// session).
	Requests []agentrt.HumanRequest `json:"requests,omitempty"`
	// Queued, when the session's own source (its id: the inputs posted
	// to it without a source) has inputs no turn has taken yet, says how
	// many and since when, and why they wait (GET of one session).
	Queued *Queued `json:"queued,omitempty"`
}

// Queued is the part of a session's status about inputs waiting for
// their turn.
type Queued struct {
	Inputs int       `json:"inputs"`
	Bytes  int64     `json:"bytes"`
	Since  time.Time `json:"since"` // when the oldest came
	// Why they wait, as this process sees it: "worker" — every gateway
	// worker is busy (gateway.workers), the turn queues; "turn" — a worker
	// has the source: its turn is starting, or waits for the source to
	// settle (debounce) or for the session's turn before; "" — neither
	// here (another process may serve the source, or the gateway's next
	// look at the inbox takes it).
	Waiting string `json:"waiting,omitempty"`
}

func sessionInfo(ss *session.Session) SessionInfo {
	return SessionInfo{ID: ss.ID, Agent: ss.Agent, Status: ss.Status, Turn: ss.Turn, Usage: ss.Usage, LastSeq: ss.LastSeq,
		Metadata: ss.Metadata, CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt}
}

type createRequest struct {
	Agent    string            `json:"agent"`
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decode(r, &req, s.cfg.Limits.MaxJSONDepth, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.ID != "" {
		if err := session.CheckID(req.ID); err != nil {
			writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadSessionID, Msg: err.Error()})
			return
		}
	}
	ss, err := s.r.CreateSession(r.Context(), req.Agent, req.ID, req.Metadata)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+ss.ID)
	writeJSON(w, http.StatusCreated, sessionInfo(ss))
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opt := session.ListOptions{Status: session.Status(q.Get("status"))}
	var err error
	if opt.After, opt.AfterCreated, err = parseSessionCursor(q.Get("after")); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	limit, err := intParam(q.Get("limit"), "limit", 50, 1, 500)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	opt.Limit = limit
	if opt.Status != "" && !knownStatus(opt.Status) {
		writeError(w, r, s.log, badRequest("status %q is not a session status (idle, running, waiting, paused, done, failed, canceled, interrupted)", opt.Status))
		return
	}
	opt.Agent = q.Get("agent") // the store keeps one agent's sessions
	out := struct {
		Sessions []SessionInfo `json:"sessions"`
		Next     string        `json:"next,omitempty"`
	}{Sessions: []SessionInfo{}}
	page, last, err := s.r.ListSessions(r.Context(), opt)
	if errors.Is(err, session.ErrNotFound) {
		err = &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeNotFound,
			Msg: fmt.Sprintf("session %q not found: after takes a page's next, or a session's id", opt.After), Err: err}
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	for _, ss := range page {
		out.Sessions = append(out.Sessions, sessionInfo(ss))
	}
	if last != nil {
		out.Next = sessionCursor(last)
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionCursor is the next of a page of sessions that ends with s: its
// creation time and id, so that the next page follows s even when s has
// been deleted meanwhile (a client deleting what it lists). It starts
// with '~', which no session id has.
func sessionCursor(s *session.Session) string {
	return "~" + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(s.CreatedAt.UnixNano(), 10)+"."+s.ID))
}

// parseSessionCursor reads an after of a session list: a sessionCursor,
// or else a session's id (looked up by the store).
func parseSessionCursor(after string) (id string, created time.Time, err error) {
	tok, ok := strings.CutPrefix(after, "~")
	if !ok {
		return after, time.Time{}, nil
	}
	if b, err := base64.RawURLEncoding.DecodeString(tok); err == nil {
		if ns, id, ok := strings.Cut(string(b), "."); ok && session.CheckID(id) == nil {
			if n, err := strconv.ParseInt(ns, 10, 64); err == nil && n > 0 {
				return id, time.Unix(0, n), nil
			}
		}
	}
	return "", time.Time{}, badRequest("after %q is not a page's next (pass the next of the page before, or a session's id)", after)
}

func knownStatus(st session.Status) bool {
	return slices.Contains([]session.Status{session.StatusIdle, session.StatusRunning, session.StatusWaiting, session.StatusPaused,
		session.StatusDone, session.StatusFailed, session.StatusCanceled, session.StatusInterrupted}, st)
}

func intParam(v, name string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s %q: want a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// getSessionRow reads session id of the request's tenant; another
// tenant's is not_found, like one that does not exist.
func (s *Server) getSessionRow(ctx context.Context, id string) (*session.Session, error) {
	ss, err := s.store.GetSession(ctx, id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeNotFound, Msg: fmt.Sprintf("session %q not found", id), Err: err}
		}
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session", Err: err}
	}
	return ss, nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ss, err := s.getSessionRow(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	info := sessionInfo(ss)
	src, err := s.gw.Source(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session's inbox", Err: err})
		return
	}
	if src.Pending > 0 {
		info.Queued = &Queued{Inputs: src.Pending, Bytes: src.Bytes, Since: src.First}
		switch {
		case src.WaitingForWorker:
			info.Queued.Waiting = "worker"
		case src.Serving:
			info.Queued.Waiting = "turn"
		}
	}
	if ss.Status == session.StatusWaiting {
		st, err := s.r.Load(r.Context(), id)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		info.Requests = st.Requests
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.r.DeleteSession(r.Context(), id, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// MessageRequest is the body of POST /v1/sessions/{id}/messages.
type MessageRequest struct {
	Text     string              `json:"text"`
	Parts    []session.InputPart `json:"parts"`
	Files    []FileUpload        `json:"files"`
	Source   string              `json:"source"`
	Metadata map[string]string   `json:"metadata"`
}

// FileUpload is an image or a file of a message: its bytes, base64, or
// a URL the server fetches (a data: URL, or an http(s) URL of a host
// server.fetch allows).
type FileUpload struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
	URL       string `json:"url"`
}

// files are the request's files as the gateway takes them: their bytes,
// or what their URLs hold (fetched here, bounded as the gateway bounds an
// input's files).
func (s *Server) files(ctx context.Context, req *MessageRequest) ([]gateway.File, error) {
	if len(req.Files) == 0 {
		return nil, nil
	}
	refs := make([]MediaRef, len(req.Files))
	for i, f := range req.Files {
		if f.URL != "" && f.Data != nil {
			return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadPart,
				Msg: fmt.Sprintf("files[%d]: both data and url: give one", i)}
		}
		refs[i] = MediaRef{Where: fmt.Sprintf("files[%d]", i), URL: f.URL, Data: f.Data, Type: f.MediaType, Name: f.Name}
		if f.URL == "" && f.Data == nil {
			refs[i].Data = []byte{} // "the file is empty"
		}
	}
	files, _, err := s.ClientFiles(ctx, refs)
	return files, err
}

// Accepted is the answer to an input: it is stored, and a turn of the
// session answers it (RunID, when that turn has started already).
type Accepted struct {
	InputID   string `json:"input_id"`
	SessionID string `json:"session_id"`
	Source    string `json:"source"`
	RunID     string `json:"run_id,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	var req MessageRequest
	ss, ok := s.sessionRequest(w, r, &req, false)
	if !ok {
		return
	}
	source := req.Source
	if source == "" {
		source = id
	}
	files, err := s.files(ctx, &req)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	in := gateway.Input{Source: source, Session: id, Agent: ss.Agent, Text: req.Text, Parts: req.Parts, Files: files,
		Metadata: req.Metadata, Key: r.Header.Get("Idempotency-Key")}
	if !wantsSSE(r) {
		sub, err := s.gw.Submit(ctx, in)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusAccepted, Accepted{InputID: sub.ID, SessionID: sub.Session, Source: sub.Source, Duplicate: sub.Duplicate, RunID: sub.RunID})
		return
	}

	// Stream the run that answers the input, watched from before the
	// input is stored so that no token of it is missed.
	t, err := s.submitTurn(ctx, in, ss.LastSeq)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	defer t.Close()
	w.Header().Set("Agentrt-Input-Id", t.Submitted.ID)
	sink := s.newSSE(w)
	defer sink.release()
	s.pumpFeed(ctx, t.f, t.After, sink, false)
}

// maxEventsPage is about the most bytes of events a JSON page of a
// session's log holds (it holds at least one event, however large): a
// page of 10,000 large events would otherwise be built whole in memory.
// A page that ends before the session's last_seq is not the last.
const maxEventsPage = 1 << 20

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	after, err := resumeFrom(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	ss, err := s.getSessionRow(ctx, id)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if wantsSSE(r) {
		// Seqs only grow: an id past the log's end is another session's or
		// store's, and waiting for it would skip every event until then.
		if after > ss.LastSeq {
			writeError(w, r, s.log, badRequest("cannot resume after event %d: it is past the session's last event %d (resume from an id this session's stream gave)", after, ss.LastSeq))
			return
		}
		sink := s.newSSE(w)
		defer sink.release()
		s.pump(ctx, func(ctx context.Context) iter.Seq2[*session.Event, error] {
			return s.r.Watch(ctx, id, after)
		}, after, sink)
		return
	}
	limit, err := intParam(r.URL.Query().Get("limit"), "limit", 1000, 1, 10000)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	buf := append(make([]byte, 0, 4096), `{"events":[`...)
	n := 0
	for ev, err := range s.store.Events(ctx, id, after) {
		if err != nil {
			writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session's events", Err: err})
			return
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		if buf, err = ev.AppendJSON(buf); err != nil {
			writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInternal, Msg: "encode an event", Err: err})
			return
		}
		n++
		if n == limit || len(buf) >= maxEventsPage {
			break
		}
	}
	buf = append(buf, `],"last_seq":`...)
	buf = strconv.AppendInt(buf, ss.LastSeq, 10)
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf)
}

// getSent answers what a model call was sent: the request derived from
// the log for the call whose model_started is event seq (or recorded, when
// a before-model hook changed it), and the provider's body for it.
func (s *Server) getSent(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		writeError(w, r, s.log, badRequest("%q is not an event's seq", r.PathValue("seq")))
		return
	}
	sent, err := s.r.SentRequest(r.Context(), r.PathValue("id"), seq)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, sent)
}
