// Package openai serves agentrt's agents over the OpenAI API, so that an
// application written against an OpenAI SDK talks to them unchanged:
//
//   - GET /v1/models lists the agents: each agent is a model.
//   - POST /v1/chat/completions sends a conversation's new user input to
//     a session of the agent named by model, and answers with the agent's
//     reply, streamed (stream: true, stream_options.include_usage) or not.
//   - POST /v1/responses, GET, POST …/cancel and DELETE
//     /v1/responses/{id} serve the Responses API: previous_response_id
//     continues a session, background: true runs without the connection,
//     the client's function tools come back as function_call items, and a
//     response's stream, its tokens included, is read again from the log
//     after any sequence number (starting_after).
//
// Which session a chat completion goes to: the session named by the
// request header Agentrt-Session, whose history the server keeps (only
// the messages after the conversation's last assistant message are new
// input); without the header, a new session, which starts from the
// messages before the last user input (imported as its history). Every
// answer names its session in the response header Agentrt-Session, so a
// client that sends it back continues the same session.
//
// The agent's own tools run on the server; the reply is the agent's
// answer. A run that waits for a person answers with the question as the
// assistant's text, the request in the answer's "agentrt" field; the next
// message to the session answers it (see docs/protocols.md).
//
// Errors have OpenAI's shape, {"error":{"message","type","param","code"}},
// with its statuses. The adapter is mounted on a server.Server, whose
// authentication and tenants apply: another tenant's session is not found.
package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
)

// SessionHeader names the session a request goes to, and the session an
// answer came from.
const SessionHeader = "Agentrt-Session"

// Config configures the adapter. Zero values are the defaults.
type Config struct {
	// Now is the clock of the answers' created times; nil: time.Now.
	Now func() time.Time
}

// Adapter serves the OpenAI API over a server's sessions. Its handlers
// are safe for concurrent use.
type Adapter struct {
	srv *server.Server
	r   *agentrt.Runner
	now func() time.Time
	// created is when the adapter was mounted, the server's start: the
	// created time of every model (an agent has none of its own).
	created int64
}

// Mount adds the OpenAI-compatible endpoints to srv.
func Mount(srv *server.Server, cfg Config) (*Adapter, error) {
	if srv == nil {
		return nil, errors.New("openai: a server is required")
	}
	a := &Adapter{srv: srv, r: srv.Runner(), now: cfg.Now}
	if a.now == nil {
		a.now = time.Now
	}
	a.created = a.now().Unix()
	srv.Mount("GET", "/v1/models", false, http.HandlerFunc(a.listModels))
	srv.Mount("GET", "/v1/models/{model}", false, http.HandlerFunc(a.getModel))
	// A completion may stream, and one that does not still waits for the
	// whole turn: neither gets the server's request timeout.
	srv.Mount("POST", "/v1/chat/completions", true, http.HandlerFunc(a.chatCompletions))
	srv.Mount("POST", "/v1/responses", true, http.HandlerFunc(a.createResponse))
	srv.Mount("GET", "/v1/responses/{id}", true, http.HandlerFunc(a.getResponse))
	// A cancel waits for the run to stop: the server's request timeout
	// bounds it.
	srv.Mount("POST", "/v1/responses/{id}/cancel", false, http.HandlerFunc(a.cancelResponse))
	srv.Mount("DELETE", "/v1/responses/{id}", false, http.HandlerFunc(a.deleteResponse))
	// The server's own refusals on these paths (no key, a rate, a method
	// they do not take) in OpenAI's shape too: its clients read no other.
	for _, p := range []string{"/v1/models", "/v1/chat/completions", "/v1/responses"} {
		srv.ShapeErrors(p, shapeError)
	}
	return a, nil
}

// shapeError writes an error of the server's in OpenAI's shape.
func shapeError(w http.ResponseWriter, status int, d server.ErrorDetail) {
	writeError(w, apiError(status, d.Code, "", "%s", d.Message))
}

// Model is an agent as GET /v1/models lists it.
type Model struct {
	ID     string `json:"id"`
	Object string `json:"object"` // "model"
	// Created is when the server started (Unix seconds): an agent has no
	// creation time of its own, and a client that caches models by it
	// sees one steady value while the server runs.
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Description is the agent's description (agentrt's own field).
	Description string `json:"description,omitempty"`
}

func (a *Adapter) model(name string) Model {
	ag, _ := a.r.Agent(name)
	m := Model{ID: name, Object: "model", Created: a.created, OwnedBy: "agentrt"}
	if ag != nil {
		m.Description = ag.Description
	}
	return m
}

func (a *Adapter) listModels(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Object string  `json:"object"`
		Data   []Model `json:"data"`
	}{Object: "list", Data: []Model{}}
	for _, name := range a.r.AgentNames() {
		out.Data = append(out.Data, a.model(name))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Adapter) getModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	if _, ok := a.r.Agent(name); !ok {
		writeError(w, modelNotFound(name))
		return
	}
	writeJSON(w, http.StatusOK, a.model(name))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"the answer could not be encoded","type":"server_error","param":null,"code":"internal"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
