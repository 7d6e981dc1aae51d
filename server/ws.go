package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// GET /v1/ws: the API over one WebSocket. A client sends JSON text frames,
// each a request with a type and an optional id the reply echoes (input,
// subscribe, unsubscribe, resolve, cancel, interrupt), and gets replies,
// errors and the events of the sessions it subscribed to, several at once
// (docs/http-api.md lists the frames).
//
// A connection is five goroutines and one per subscription, all joined
// before serveWS returns:
//
//   - the handler's reads frames and queues them;
//   - the worker carries them out one at a time, in order, so that two
//     inputs reach their session in the order they were sent;
//   - the writer is the only one to write frames, in the order they are
//     handed to it (send), the close frame last;
//   - ping pings the client every Heartbeat;
//   - keep closes the connection when the server shuts down;
//   - each subscription copies its session's events to the writer
//     (Server.copyEvents, as an SSE stream does).
//
// The reader keeps reading while the worker works, so that pongs and
// close frames are seen at once: a frame that would overfill the queue is
// refused (too_many_requests) rather than waited for.

// Bounds of one connection.
const (
	// wsQueue is how many frames may wait for the worker.
	wsQueue = 64
	// wsMaxSubscriptions is how many sessions one connection follows at
	// once.
	wsMaxSubscriptions = 256
	// wsDrainFactor times Limits.MaxBodyBytes is the largest frame the
	// server reads to its end in order to refuse it and go on; a larger
	// one closes the connection (1009, message too big).
	wsDrainFactor = 4
)

// Frame types.
const (
	wsInput        = "input"
	wsSubscribe    = "subscribe"
	wsUnsubscribe  = "unsubscribe"
	wsResolve      = "resolve"
	wsCancel       = "cancel"
	wsInterrupt    = "interrupt"
	wsAccepted     = "accepted"
	wsSubscribed   = "subscribed"
	wsUnsubscribed = "unsubscribed"
	wsResolved     = "resolved"
	wsControlled   = "controlled"
	wsEvent        = "event"
	wsReconnect    = "reconnect"
	wsError        = "error"
)

// wsHead is what every frame holds: its type and the id the client gave
// it, which the reply echoes.
type wsHead struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
}

// wsInputFrame sends input to a session through the gateway, as POST
// /v1/sessions/{id}/messages does; Key is its Idempotency-Key.
type wsInputFrame struct {
	wsHead
	Session string `json:"session"`
	MessageRequest
	Key string `json:"key"`
}

// wsSubscribeFrame follows a session's events after After, then live.
type wsSubscribeFrame struct {
	wsHead
	Session string `json:"session"`
	After   int64  `json:"after"`
}

// wsSessionFrame names a session and nothing else (unsubscribe).
type wsSessionFrame struct {
	wsHead
	Session string `json:"session"`
}

// wsResolveFrame answers a pending request, as POST
// /v1/sessions/{id}/requests/{rid} does.
type wsResolveFrame struct {
	wsHead
	Session   string `json:"session"`
	RequestID string `json:"request_id"`
	ResolveRequest
}

// wsControlFrame cancels or interrupts a session's run.
type wsControlFrame struct {
	wsHead
	Session string `json:"session"`
	ControlRequest
}

// Replies.
type (
	wsAcceptedReply struct {
		wsHead
		Accepted
	}
	wsSubscribedReply struct {
		wsHead
		Session string `json:"session"`
		After   int64  `json:"after"`
		LastSeq int64  `json:"last_seq"`
	}
	wsResolvedReply struct {
		wsHead
		Session string `json:"session"`
		ResolveResponse
	}
	wsControlledReply struct {
		wsHead
		Session string `json:"session"`
		*agentrt.ControlOutcome
	}
	wsReconnectFrame struct {
		wsHead
		Session     string `json:"session"`
		LastEventID int64  `json:"last_event_id"`
		Reason      string `json:"reason"`
	}
	wsErrorFrame struct {
		wsHead
		Session string `json:"session,omitempty"`
		ErrorDetail
	}
)

// errWSClosed is what sending on a connection that ended returns.
var errWSClosed = errors.New("the WebSocket connection is closed")

// wsConn is one client's connection.
type wsConn struct {
	s   *Server
	c   *websocket.Conn
	key *keyEntry // the client's API key, whose rate its frames count against; nil without keys
	// ctx carries the client's tenant and principal, and ends when the
	// connection does (the writer failed, or the handler is done with it).
	ctx    context.Context
	cancel context.CancelFunc

	queue   chan wsItem   // frames read, for the worker
	out     chan wsOut    // frames to write, for the writer
	wdone   chan struct{} // closed when the writer returns
	closing atomic.Bool   // the reader stopped: subscribe no more

	mu sync.Mutex // guards subs and live
	// subs are the subscriptions by session, live every subscription's
	// goroutine until it returns (one that fell behind leaves subs first,
	// so that the client may subscribe again at once).
	subs map[string]*wsSub
	live map[*wsSub]bool
}

// wsItem is a frame read, or one too large to keep (its error goes out
// in its turn, after the replies to the frames before it).
type wsItem struct {
	b        []byte
	tooLarge bool
}

// wsOut is a frame to write, or (Code set) the close frame to end the
// connection with, after the frames handed before it.
type wsOut struct {
	b      []byte
	code   websocket.StatusCode
	reason string
}

// wsSub is one subscription: a session's events, copied to the client.
type wsSub struct {
	session string
	id      string // the subscribe frame's
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{} // closed when its goroutine returns
}

// serveWS upgrades GET /v1/ws and serves the connection until it ends.
// The request was authenticated (authenticate), and its origin checked
// by the browser policy (origin.go): a page of the server's own origin or
// of one of CORS.Origins may connect, and a client that sends no Origin
// (not a browser) too.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Upgrade", "websocket")
		writeError(w, r, s.log, badRequest("GET /v1/ws takes a WebSocket handshake (Connection: Upgrade, Upgrade: websocket)"))
		return
	}
	// The connection counts as one client (one "ws" stream), and
	// Shutdown waits for it, however many subscriptions it carries.
	if !s.openStream() {
		// Shutdown began after the request was let in.
		writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown, Msg: "the server is shutting down"})
		return
	}
	defer s.streams.Done()
	// The browser policy checked the origin (exact origins, not the
	// library's host patterns).
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	c.SetReadLimit(wsDrainFactor * s.cfg.Limits.MaxBodyBytes)
	s.clients.Add(1)
	defer s.clients.Add(-1)
	if g := s.gauges["ws"]; g != nil {
		g.Inc()
		defer g.Dec()
	}

	// The connection outlives nothing of the request but its tenant and
	// principal; a request's context is not to be used after a hijack.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	wc := &wsConn{s: s, c: c, ctx: ctx, cancel: cancel, queue: make(chan wsItem, wsQueue), out: make(chan wsOut),
		wdone: make(chan struct{}), subs: map[string]*wsSub{}, live: map[*wsSub]bool{}}
	if token, ok := bearer(r); ok && len(s.keys.keys) > 0 {
		wc.key = s.keys.find(token)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(wc.wdone)
		wc.write()
	})
	wg.Go(wc.ping)
	wg.Go(wc.keep)
	worker := make(chan struct{})
	go func() {
		defer close(worker)
		wc.work()
	}()

	code, reason := wc.read()

	// Frames read are carried out (their replies go out while the
	// connection lasts), subscriptions end, then the connection: with
	// code after the last reply, when it is still open.
	wc.closing.Store(true)
	close(wc.queue)
	<-worker
	wc.endSubs()
	if code != 0 {
		_ = wc.enqueue(nil, wsOut{code: code, reason: reason})
	}
	cancel()
	wg.Wait()
	_ = c.CloseNow()
}

// headerHas reports whether header key lists token (case-insensitive).
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// read reads frames and queues them for the worker until the connection
// ends, and returns the status to close it with (0: it is closed
// already). A frame that is not text ends it; a frame too large, or one
// more than the queue holds, is refused with an error frame and the
// connection goes on.
func (wc *wsConn) read() (websocket.StatusCode, string) {
	limit := wc.s.cfg.Limits.MaxBodyBytes
	for {
		typ, rd, err := wc.c.Reader(wc.ctx)
		if err != nil {
			// The client closed, went away or broke the protocol (the
			// library answered it), a frame was over the hard limit, or
			// the server closed the connection.
			return 0, ""
		}
		if typ != websocket.MessageText {
			return websocket.StatusUnsupportedData, "frames are JSON text; a binary frame is not taken"
		}
		b, err := io.ReadAll(io.LimitReader(rd, limit+1))
		if err != nil {
			return 0, ""
		}
		if int64(len(b)) <= limit && !utf8.Valid(b) {
			// RFC 6455 §8.1: a text frame that is not UTF-8 fails the
			// connection, with 1007 (the library does not check).
			return websocket.StatusInvalidFramePayloadData, "a text frame must be UTF-8"
		}
		it := wsItem{b: b}
		if int64(len(b)) > limit {
			// Read the rest to reach the next frame; the library closes
			// the connection past wsDrainFactor times the limit.
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return 0, ""
			}
			it = wsItem{tooLarge: true}
		}
		select {
		case wc.queue <- it:
		default:
			var head wsHead
			_ = json.Unmarshal(it.b, &head)
			wc.fail(head.ID, "", &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeTooManyRequests,
				Msg: fmt.Sprintf("%d frames wait on this connection already: wait for their replies", wsQueue)})
		}
	}
}

// work carries out the queued frames, one at a time, until the queue is
// closed and empty.
func (wc *wsConn) work() {
	for it := range wc.queue {
		if it.tooLarge {
			wc.fail("", "", &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBodyTooLarge,
				Msg: fmt.Sprintf("the frame is over %d bytes", wc.s.cfg.Limits.MaxBodyBytes)})
			continue
		}
		wc.handle(it.b)
	}
}

// handle carries out one frame and answers it.
func (wc *wsConn) handle(b []byte) {
	var head wsHead
	herr := json.Unmarshal(b, &head)
	// Every frame counts against the key's rate, as a request does.
	if _, err := wc.s.overRate(wc.key); err != nil {
		wc.fail(head.ID, "", err)
		return
	}
	if herr != nil {
		var se *json.SyntaxError
		if errors.As(herr, &se) {
			wc.fail("", "", badRequest("the frame is not JSON: %s", jsonError(herr)))
		} else {
			wc.fail("", "", badRequest("a frame is a JSON object with a type and an optional id, both strings"))
		}
		return
	}
	if d, most := depth(b), wc.s.cfg.Limits.MaxJSONDepth; d > most {
		wc.fail(head.ID, "", badRequest("the frame's JSON nests %d deep, more than the %d allowed", d, most))
		return
	}
	if head.Type != wsUnsubscribe && wc.s.draining.Load() {
		wc.fail(head.ID, "", &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown, Msg: "the server is shutting down"})
		return
	}
	// Requests the server has read are carried out even when the
	// connection ends meanwhile; each is bounded as a request is.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(wc.ctx), wc.s.cfg.Limits.RequestTimeout)
	defer cancel()
	var (
		session string
		err     error
	)
	switch head.Type {
	case wsInput:
		session, err = wc.input(ctx, b)
	case wsSubscribe:
		session, err = wc.subscribe(ctx, b)
	case wsUnsubscribe:
		session, err = wc.unsubscribe(b)
	case wsResolve:
		session, err = wc.resolve(ctx, b)
	case wsCancel, wsInterrupt:
		session, err = wc.control(ctx, b, head.Type == wsInterrupt)
	case "":
		err = badRequest("the frame has no type: want input, subscribe, unsubscribe, resolve, cancel or interrupt")
	default:
		err = badRequest("unknown frame type %q: want input, subscribe, unsubscribe, resolve, cancel or interrupt", head.Type)
	}
	if err != nil {
		if status, _ := statusOf(err); status >= 500 {
			wc.s.log.LogAttrs(ctx, slog.LevelError, "websocket request failed", slog.String("type", head.Type),
				slog.String("session", session), slog.String("error", err.Error()))
		}
		wc.fail(head.ID, session, err)
	}
}

// decodeFrame decodes frame b into v strictly: no unknown fields, one
// JSON value; and checks it names a session.
func decodeFrame(b []byte, v any, typ string, session *string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the %s frame: %s", typ, jsonError(err))
	}
	if dec.More() {
		return badRequest("the %s frame holds more than one JSON value", typ)
	}
	if *session == "" {
		return badRequest("the %s frame needs a session", typ)
	}
	return nil
}

// input submits an input frame to the gateway, as postMessage does.
func (wc *wsConn) input(ctx context.Context, b []byte) (string, error) {
	var f wsInputFrame
	if err := decodeFrame(b, &f, wsInput, &f.Session); err != nil {
		return f.Session, err
	}
	ss, err := wc.s.getSessionRow(ctx, f.Session)
	if err != nil {
		return f.Session, err
	}
	source := f.Source
	if source == "" {
		source = f.Session
	}
	sub, err := wc.s.gw.Submit(ctx, gateway.Input{Source: source, Session: f.Session, Agent: ss.Agent, Text: f.Text, Parts: f.Parts,
		Metadata: f.Metadata, Key: f.Key})
	if err != nil {
		return f.Session, err
	}
	acc := Accepted{InputID: sub.ID, SessionID: sub.Session, Source: sub.Source, Duplicate: sub.Duplicate, RunID: sub.RunID}
	wc.reply(wsAcceptedReply{wsHead: wsHead{Type: wsAccepted, ID: f.ID}, Accepted: acc})
	return f.Session, nil
}

// subscribe starts following a session's events after f.After: those
// stored, then each as it commits, with the live tokens of its runs in
// this process. The subscribed reply comes before its first event.
func (wc *wsConn) subscribe(ctx context.Context, b []byte) (string, error) {
	var f wsSubscribeFrame
	if err := decodeFrame(b, &f, wsSubscribe, &f.Session); err != nil {
		return f.Session, err
	}
	if f.After < 0 {
		return f.Session, badRequest("after %d is not an event seq (a whole number, 0 or more)", f.After)
	}
	if wc.closing.Load() {
		return f.Session, nil // the connection ends: nobody to follow for
	}
	ss, err := wc.s.getSessionRow(ctx, f.Session)
	if err != nil {
		return f.Session, err
	}
	// A subscription is a stream of the key's, as an SSE stream is.
	budget, err := takeStream(wc.ctx)
	if err != nil {
		return f.Session, err
	}
	sctx, cancel := context.WithCancel(wc.ctx)
	sub := &wsSub{session: f.Session, id: f.ID, ctx: sctx, cancel: cancel, done: make(chan struct{})}
	wc.mu.Lock()
	switch {
	case wc.subs[f.Session] != nil:
		err = badRequest("this connection follows session %q already: unsubscribe first", f.Session)
	case len(wc.subs) >= wsMaxSubscriptions:
		err = badRequest("this connection follows %d sessions already, the most it may", wsMaxSubscriptions)
	default:
		wc.subs[f.Session] = sub
		wc.live[sub] = true
	}
	wc.mu.Unlock()
	if err != nil {
		cancel()
		budget.release()
		return f.Session, err
	}
	// The subscribed reply goes out once the watch sees the session's
	// live tokens, before its first event: a client that sends input
	// after the reply misses none of the turn's tokens.
	hello, err := json.Marshal(wsSubscribedReply{wsHead: wsHead{Type: wsSubscribed, ID: f.ID}, Session: f.Session, After: f.After, LastSeq: ss.LastSeq})
	if err != nil {
		cancel()
		budget.release()
		return f.Session, err
	}
	ready := make(chan struct{})
	subscribed := func() {
		if sctx.Err() == nil {
			_ = wc.send(sctx.Done(), hello)
		}
		close(ready)
	}
	go func() {
		defer func() {
			cancel()
			budget.release()
			wc.mu.Lock()
			if wc.subs[sub.session] == sub {
				delete(wc.subs, sub.session)
			}
			delete(wc.live, sub)
			wc.mu.Unlock()
			close(sub.done)
		}()
		wc.s.copyEvents(sctx, func(ctx context.Context) iter.Seq2[*session.Event, error] {
			return wc.s.r.WatchSubscribed(ctx, f.Session, f.After, subscribed)
		}, f.After, &wsSink{wc: wc, sub: sub})
	}()
	// The next frame waits for the reply (or for the subscription's end,
	// when the watch failed first: its error frame went out instead), as
	// long as a request may take.
	select {
	case <-ready:
	case <-sub.done:
	case <-ctx.Done():
		cancel()
		<-sub.done
		return f.Session, ctx.Err()
	}
	return f.Session, nil
}

// unsubscribe ends a subscription; no event of it follows the reply.
func (wc *wsConn) unsubscribe(b []byte) (string, error) {
	var f wsSessionFrame
	if err := decodeFrame(b, &f, wsUnsubscribe, &f.Session); err != nil {
		return f.Session, err
	}
	wc.mu.Lock()
	sub := wc.subs[f.Session]
	delete(wc.subs, f.Session)
	wc.mu.Unlock()
	if sub == nil {
		return f.Session, badRequest("this connection does not follow session %q", f.Session)
	}
	sub.cancel()
	<-sub.done
	wc.reply(wsSessionFrame{wsHead: wsHead{Type: wsUnsubscribed, ID: f.ID}, Session: f.Session})
	return f.Session, nil
}

// resolve answers a pending request as the key's principal, as the HTTP
// route does; the run goes on in the background when it was the last.
func (wc *wsConn) resolve(ctx context.Context, b []byte) (string, error) {
	var f wsResolveFrame
	if err := decodeFrame(b, &f, wsResolve, &f.Session); err != nil {
		return f.Session, err
	}
	if f.RequestID == "" {
		return f.Session, badRequest("the resolve frame needs a request_id")
	}
	if _, err := wc.s.getSessionRow(ctx, f.Session); err != nil {
		return f.Session, err
	}
	res := agentrt.Resolution{Decision: f.Decision, Arguments: f.Arguments, Text: f.Text, Selected: f.Selected,
		Result: f.Result, Reason: f.Reason, By: agentrt.ActorOf(ctx)}
	if f.Always != nil {
		res.Always = &agentrt.Always{Scope: f.Always.Scope, Match: f.Always.Match}
	}
	out, err := wc.s.r.ResolveAndContinue(ctx, f.Session, f.RequestID, res)
	if err != nil {
		return f.Session, err
	}
	rr := ResolveResponse{Event: out.Event, Pending: out.Pending}
	if out.Run != nil {
		rr.RunID = out.Run.ID()
	}
	wc.reply(wsResolvedReply{wsHead: wsHead{Type: wsResolved, ID: f.ID}, Session: f.Session, ResolveResponse: rr})
	return f.Session, nil
}

// control cancels or interrupts a session's run wherever it runs, as the
// HTTP routes do; the reply comes once the run has stopped.
func (wc *wsConn) control(ctx context.Context, b []byte, interrupt bool) (string, error) {
	var f wsControlFrame
	typ := wsCancel
	if interrupt {
		typ = wsInterrupt
	}
	if err := decodeFrame(b, &f, typ, &f.Session); err != nil {
		return f.Session, err
	}
	if _, err := wc.s.getSessionRow(ctx, f.Session); err != nil {
		return f.Session, err
	}
	stop := wc.s.r.Cancel
	if interrupt {
		stop = wc.s.r.Interrupt
	}
	out, err := stop(ctx, f.Session, f.Reason)
	if err != nil {
		return f.Session, err
	}
	wc.reply(wsControlledReply{wsHead: wsHead{Type: wsControlled, ID: f.ID}, Session: f.Session, ControlOutcome: out})
	return f.Session, nil
}

// reply sends a reply frame.
func (wc *wsConn) reply(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		wc.s.log.LogAttrs(wc.ctx, slog.LevelError, "websocket reply could not be encoded", slog.String("error", err.Error()))
		b = []byte(`{"type":"error","code":"internal","message":"the reply could not be encoded"}`)
	}
	_ = wc.send(nil, b)
}

// fail sends an error frame: err's code and message, as an HTTP error
// body has them, with the frame's id and session.
func (wc *wsConn) fail(id, session string, err error) {
	_, d := statusOf(err)
	wc.reply(wsErrorFrame{wsHead: wsHead{Type: wsError, ID: id}, Session: session, ErrorDetail: d})
}

// send hands frame b to the writer, after every frame handed before it.
// It fails when the connection ended, or stop (a subscription's) closed.
func (wc *wsConn) send(stop <-chan struct{}, b []byte) error {
	return wc.enqueue(stop, wsOut{b: b})
}

func (wc *wsConn) enqueue(stop <-chan struct{}, o wsOut) error {
	select {
	case <-stop:
		// Ended already: nothing more of it goes out, even when the
		// writer is free too.
		return context.Canceled
	default:
	}
	select {
	case wc.out <- o:
		return nil
	case <-wc.ctx.Done():
		return errWSClosed
	case <-wc.wdone:
		return errWSClosed
	case <-stop:
		return context.Canceled
	}
}

// write writes the frames send hands it, until the connection ends or
// it is handed the close frame; a client that takes none for
// WriteTimeout is dropped (the library closes the connection when a
// write's context ends).
func (wc *wsConn) write() {
	for {
		select {
		case o := <-wc.out:
			if o.code != 0 {
				_ = wc.c.Close(o.code, o.reason)
				return
			}
			ctx, cancel := context.WithTimeout(wc.ctx, wc.s.cfg.WriteTimeout)
			err := wc.c.Write(ctx, websocket.MessageText, o.b)
			late := errors.Is(ctx.Err(), context.DeadlineExceeded)
			cancel()
			if err != nil {
				// Not when the connection was ending anyway.
				if late || wc.ctx.Err() == nil {
					wc.s.log.LogAttrs(wc.ctx, slog.LevelDebug, "websocket client dropped: a write failed or took longer than the write timeout",
						slog.Bool("timeout", late), slog.String("error", err.Error()))
				}
				wc.cancel()
				return
			}
		case <-wc.ctx.Done():
			return
		}
	}
}

// ping pings the client every Heartbeat and drops it when it does not
// answer within WriteTimeout. The reader reads the pongs: once it has
// stopped, so does ping.
func (wc *wsConn) ping() {
	t := time.NewTicker(wc.s.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if wc.closing.Load() {
				return
			}
			ctx, cancel := context.WithTimeout(wc.ctx, wc.s.cfg.WriteTimeout)
			err := wc.c.Ping(ctx)
			cancel()
			if err != nil {
				if wc.ctx.Err() == nil {
					wc.s.log.LogAttrs(wc.ctx, slog.LevelDebug, "websocket client dropped: no answer to a ping", slog.String("error", err.Error()))
				}
				_ = wc.c.CloseNow()
				return
			}
		case <-wc.ctx.Done():
			return
		}
	}
}

// keep closes the connection when the server shuts down, once every
// subscription has told its client where to reconnect from (copyEvents
// sends a reconnect frame when the server stops).
func (wc *wsConn) keep() {
	select {
	case <-wc.s.stop:
		wc.mu.Lock()
		live := make([]*wsSub, 0, len(wc.live))
		for sub := range wc.live {
			live = append(live, sub)
		}
		wc.mu.Unlock()
		for _, sub := range live {
			<-sub.done
		}
		_ = wc.enqueue(nil, wsOut{code: websocket.StatusGoingAway, reason: "the server is shutting down: connect again"})
	case <-wc.ctx.Done():
	}
}

// endSubs ends every subscription and waits for them.
func (wc *wsConn) endSubs() {
	wc.mu.Lock()
	live := make([]*wsSub, 0, len(wc.live))
	for sub := range wc.live {
		live = append(live, sub)
	}
	wc.mu.Unlock()
	for _, sub := range live {
		sub.cancel()
		<-sub.done
	}
}

// leave takes sub out of the connection's subscriptions: the client may
// subscribe to its session again.
func (wc *wsConn) leave(sub *wsSub) {
	wc.mu.Lock()
	if wc.subs[sub.session] == sub {
		delete(wc.subs, sub.session)
	}
	wc.mu.Unlock()
}

// wsSink writes a subscription's events as event frames.
type wsSink struct {
	wc  *wsConn
	sub *wsSub
}

// event writes {"type":"event","id":…,"session":…,"event":EVENT}, the
// event as SSE's data has it.
func (k *wsSink) event(ev *session.Event) error {
	b := make([]byte, 0, 512)
	b = append(b, `{"type":"event"`...)
	if k.sub.id != "" {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, k.sub.id)
	}
	b = append(b, `,"session":`...)
	b = appendJSONString(b, k.sub.session)
	b = append(b, `,"event":`...)
	b, err := ev.AppendJSON(b)
	if err != nil {
		return err
	}
	b = append(b, '}')
	return k.wc.send(k.sub.ctx.Done(), b)
}

// flush has nothing to do: each event is a frame of its own.
func (k *wsSink) flush() error { return nil }

// kind is "ws", though copyEvents does not count a subscription: the
// connection counts once.
func (k *wsSink) kind() string { return "ws" }

// heartbeat only checks the subscription goes on: the connection's pings
// keep it alive.
func (k *wsSink) heartbeat() error { return k.sub.ctx.Err() }

// behind tells the client to subscribe again after last; the
// subscription ends.
func (k *wsSink) behind(last int64) error {
	k.wc.leave(k.sub)
	b, err := json.Marshal(wsReconnectFrame{wsHead: wsHead{Type: wsReconnect, ID: k.sub.id}, Session: k.sub.session, LastEventID: last,
		Reason: "subscribe again after last_event_id"})
	if err != nil {
		return err
	}
	return k.wc.send(k.sub.ctx.Done(), b)
}

// fail tells the client the subscription ends with err.
func (k *wsSink) fail(err error) error {
	k.wc.leave(k.sub)
	_, d := statusOf(err)
	b, merr := json.Marshal(wsErrorFrame{wsHead: wsHead{Type: wsError, ID: k.sub.id}, Session: k.sub.session, ErrorDetail: d})
	if merr != nil {
		return merr
	}
	return k.wc.send(k.sub.ctx.Done(), b)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// overRate takes one request (a request, a WebSocket frame) from key e's
// rate, or reports the error of one over it, with the seconds to wait
// (Retry-After).
func (s *Server) overRate(e *keyEntry) (retry int, err error) {
	if e == nil || e.limit == nil {
		return 0, nil
	}
	now := s.now()
	res := e.limit.ReserveN(now, 1)
	if d := res.DelayFrom(now); !res.OK() || d > 0 {
		res.CancelAt(now)
		retry = retryAfter(d)
		return retry, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeTooManyRequests,
			Msg: fmt.Sprintf("the API key is over its rate of %g requests a second: try again in %d s", float64(e.limit.Limit()), retry)}
	}
	return 0, nil
}
