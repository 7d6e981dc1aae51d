package agui

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// stream writes AG-UI events as server-sent events.
type stream struct {
	srv    *server.Server
	w      http.ResponseWriter
	rc     *http.ResponseController
	t      *translator
	buf    []byte
	broken bool // a write failed: the client is gone
	// ka is held around each write once the stream is open: the
	// server's keep-alive comments go between them.
	ka *server.KeepAlive
}

// open starts the event stream: RUN_STARTED, the thread's state, and its
// messages when msgs is not nil (a reconnect).
func (st *stream) open(ss *session.Session, msgs []Message) {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	st.w.WriteHeader(http.StatusOK)
	evs := []Event{st.t.started(), {Type: StateSnapshot, Snapshot: map[string]any{
		"session": ss.ID, "agent": ss.Agent, "status": ss.Status, "turn": ss.Turn}}}
	if msgs != nil {
		evs = append(evs, Event{Type: MessagesSnapshot, Messages: msgs})
	}
	st.send(evs...)
	if st.ka == nil {
		st.ka = st.srv.KeepAlive(st.w)
	}
}

// close stops the keep-alive comments: the handler is about to return.
func (st *stream) close() {
	if st.ka != nil {
		st.ka.Stop()
	}
}

// send writes evs and flushes; it reports false once the client is gone.
func (st *stream) send(evs ...Event) bool {
	if st.broken {
		return false
	}
	if len(evs) == 0 {
		return true
	}
	st.buf = st.buf[:0]
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			// Only a payload of ours that does not encode gets here.
			b, _ = json.Marshal(Event{Type: RunError, Code: agentrt.CodeInternal, Message: "an event could not be encoded"})
		}
		st.buf = append(st.buf, "data: "...)
		st.buf = append(st.buf, b...)
		st.buf = append(st.buf, '\n', '\n')
	}
	if st.ka != nil {
		st.ka.Lock()
		defer st.ka.Unlock()
	}
	if _, err := st.w.Write(st.buf); err != nil {
		st.broken = true
		return false
	}
	if err := st.rc.Flush(); err != nil {
		st.broken = true
		return false
	}
	return true
}

// lastRun is how the thread's last run ended, as the log says: its
// answer, its failure and the reason it stopped, for the terminal event of
// a client that joins the thread after it.
type lastRun struct {
	final           string
	errCode, errMsg string
	reason          string
}

// history is the thread's conversation as the log holds it, with the ids
// a stream of its runs gave its messages, and how its last run ended.
func history(ctx context.Context, store session.Store, id string) ([]Message, lastRun, error) {
	out := []Message{}
	var attempt int64
	var purpose, last string
	var run lastRun
	for ev, err := range store.Events(ctx, id, 0) {
		if err != nil {
			return nil, lastRun{}, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the thread's log", Err: err}
		}
		switch d := ev.Data.(type) {
		case *session.MessagesImported:
			for i, m := range d.Messages {
				out = append(out, imported(ev.Seq, i, m))
			}
		case *session.Error:
			// As the translator reads it: the run's own failure names
			// no model and no attempt.
			if d.Model == "" && d.Attempt == 0 {
				run.errCode, run.errMsg = d.Code, d.Message
			}
		case *session.RunFinished:
			run.reason = d.Reason
		case *session.RunStarted:
			run = lastRun{}
			if d.Input != "" {
				out = append(out, Message{ID: userID(ev.Seq), Role: "user", Content: ptr(d.Input)})
			}
		case *session.InputSteered:
			out = append(out, Message{ID: userID(ev.Seq), Role: "user", Content: ptr(d.Text)})
		case *session.ModelStarted:
			attempt, purpose = ev.Seq, d.Purpose
		case *session.ModelFinished:
			if purpose != "" || d.Purpose != "" || d.Content == "" && len(d.ToolCalls) == 0 {
				break
			}
			m := Message{ID: assistantID(attempt), Role: "assistant"}
			if d.Content != "" {
				m.Content = ptr(d.Content)
				last = d.Content
			}
			m.ToolCalls = toolCalls(d.ToolCalls)
			out = append(out, m)
		case *session.ToolResult:
			content := string(d.Result)
			if !d.OK {
				content = "error: " + d.Error
			}
			out = append(out, Message{ID: resultID(d.CallID), Role: "tool", ToolCallID: d.CallID, Content: ptr(content)})
		case *session.Final:
			run.final = d.Text
			if d.Text != "" && d.Text != last {
				out = append(out, Message{ID: finalID(ev.Seq), Role: "assistant", Content: ptr(d.Text)})
				last = d.Text
			}
		}
	}
	return out, run, nil
}

func toolCalls(cs []model.ToolCall) []ToolCall {
	var out []ToolCall
	for _, c := range cs {
		tc := ToolCall{ID: c.ID, Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, callArgs(c)
		out = append(out, tc)
	}
	return out
}

func imported(seq int64, i int, m model.Message) Message {
	id := "import-" + userID(seq)[len("user-"):] + "-" + itoa(i)
	out := Message{ID: id, Role: string(m.Role), ToolCallID: m.ToolCallID}
	if t := m.Text(); t != "" || m.Role != model.RoleAssistant {
		out.Content = ptr(t)
	}
	out.ToolCalls = toolCalls(m.ToolCalls)
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
