package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/agentrt/agentrt/internal/fetch"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// Push notifications. A task's push configs are records of its session
// in the store (session.Records, kind a2a.push, keyed by the task's id),
// so that every replica, and a server restarted, has them. Their
// delivery is the pusher's, one owner for every task: the process that
// pushes a task's updates follows its turn in the session's log and
// pushes what the task becomes, wherever the turn runs — a2a-go's
// executions and the adapter's own streams push nothing.
//
// Where delivery stands is a record too (kind a2a.pushing, one per task
// with configs whose end is not pushed yet): the seq of the last event
// whose updates were pushed, and which process pushes them, until when
// (a lease, renewed as it goes, taken over when it expires or its
// process is gone). The process that made a config pushes first; any
// other takes the task over when that one stops (a shutdown hands it
// over at once, a crash when the lease ends), and goes on after the
// last event pushed: after a restart, or on whichever replica is alive,
// the task's updates are pushed from where they stopped. A task that
// waits for a person is let go of once its question is pushed, and
// taken up again by any process once its session moves on (the answer,
// given anywhere). So each update is pushed once, but for the updates of
// a process that died after pushing and before recording that it had,
// which its successor pushes again.
//
// What is pushed: each status update and the answer's final artifact, as
// the task's stream has them, not the chunks streamed before it (the log
// does not keep them, and a webhook gets the answer whole).

// Kinds of the adapter's records.
const (
	kindPushConfig = "a2a.push"
	kindPushing    = "a2a.pushing"
)

// pushState is where the delivery of a task's updates stands (a record
// of kind a2a.pushing).
type pushState struct {
	// Pushed is the seq of the last event of the session whose updates
	// were pushed.
	Pushed int64 `json:"pushed"`
	// Owner is the runner (Runner.Owner) that pushes them, until Until;
	// "" when nobody does.
	Owner string    `json:"owner,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// Resolver looks up the addresses of a webhook's host (net.Resolver's
// LookupIPAddr).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// checkWebhook refuses a push config's URL that a push could not, or
// should not, go to: not http or https, credentials in the URL, no host,
// and, unless private is true, a host that is or resolves to a loopback,
// private, link-local, multicast or unspecified address (A2A's SSRF
// guidance: a client must not make the server POST into its own
// network). The delivery checks the address it dials again (a name may
// resolve elsewhere by then).
func checkWebhook(ctx context.Context, res Resolver, raw string, private bool) error {
	bad := func(format string, args ...any) error {
		return rpcError(spec.ErrInvalidParams, "push config url %q: "+format, append([]any{raw}, args...)...)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("want an http or https URL")
	case u.User != nil:
		return bad("credentials do not go in the URL: give them as the config's authentication or token")
	case u.Hostname() == "":
		return bad("the URL has no host")
	}
	if private {
		return nil
	}
	host := u.Hostname()
	const how = " (server.a2a.allow_private_webhooks lets pushes go there, for a mesh inside one network)"
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := fetch.Check(ip); err != nil {
			return bad("%v%s", err, how)
		}
		return nil
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return bad("%s is a loopback name%s", host, how)
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := res.LookupIPAddr(lctx, host)
	if err != nil || len(addrs) == 0 {
		return bad("its host %s does not resolve: a push could not reach it", host)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		if err := fetch.Check(ip); err != nil {
			return bad("%s resolves to %v%s", host, err, how)
		}
	}
	return nil
}

// pusher keeps the push configs of the tasks of every agent of a mux and
// pushes their updates (see above). Its methods may be called
// concurrently.
type pusher struct {
	srv     *server.Server
	r       *agentrt.Runner
	recs    session.Records
	sender  push.Sender
	res     Resolver
	private bool
	timeout time.Duration // of one push
	poll    time.Duration // how often it looks for tasks to take over
	lease   time.Duration // how long a process pushes a task without renewing
	log     *slog.Logger
	tasks   func(agent string) *taskStore // an agent's tasks; nil for none
	kicks   chan taskKick                 // a task to push now, from this process

	mu        sync.Mutex
	following map[taskKick]bool // guarded by mu: the tasks this process pushes
	wg        sync.WaitGroup    // the followers
}

// taskKick names a task of a tenant.
type taskKick struct {
	tenant string
	id     spec.TaskID
}

func newPusher(srv *server.Server, cfg Config, recs session.Records, tasks func(string) *taskStore, log *slog.Logger) *pusher {
	p := &pusher{srv: srv, r: srv.Runner(), recs: recs, res: cfg.Resolver, private: cfg.AllowPrivateWebhooks,
		timeout: cfg.PushTimeout, poll: cfg.PushPoll, lease: cfg.PushLease, log: log, tasks: tasks,
		kicks: make(chan taskKick, 64), following: map[taskKick]bool{}}
	if p.res == nil {
		p.res = net.DefaultResolver
	}
	// FailOnError: a failed push is the pusher's to log, not a2a-go's.
	p.sender = push.NewHTTPPushSender(&push.HTTPSenderConfig{Timeout: cfg.PushTimeout, FailOnError: true, AllowPrivateNetworks: cfg.AllowPrivateWebhooks})
	return p
}

// configs are task id's push configs.
func (p *pusher) configs(ctx context.Context, id spec.TaskID) ([]*spec.PushConfig, error) {
	ref, ok := parseTaskID(id)
	if !ok {
		return nil, spec.ErrTaskNotFound
	}
	recs, err := p.recs.SessionRecords(ctx, ref.session, kindPushConfig, string(id))
	if err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (the push configs of task " + string(id) + ")", Err: err}
	}
	out := make([]*spec.PushConfig, 0, len(recs))
	for _, r := range recs {
		var c spec.PushConfig
		if err := json.Unmarshal(r.Data, &c); err != nil {
			p.log.Warn("a2a: a push config that does not decode", "task", id, "config", r.ID, "err", err)
			continue
		}
		out = append(out, &c)
	}
	return out, nil
}

// Limits of push configs: a client cannot make the store keep more of
// them, or larger ones, than a webhook needs.
const (
	maxPushConfigs   = 10   // a task's
	maxPushURL       = 2048 // bytes of a config's URL
	maxPushCredBytes = 4096 // bytes of its token and credentials
)

// check refuses config c, made for a task: too large, or as
// checkWebhook does.
func (p *pusher) check(ctx context.Context, c *spec.PushConfig) error {
	if c == nil {
		return rpcError(spec.ErrInvalidParams, "the push config is empty")
	}
	cred := len(c.Token)
	if c.Auth != nil {
		cred += len(c.Auth.Scheme) + len(c.Auth.Credentials)
	}
	switch {
	case len(c.URL) > maxPushURL:
		return rpcError(spec.ErrInvalidParams, "push config url: %d bytes, more than the %d allowed", len(c.URL), maxPushURL)
	case cred > maxPushCredBytes:
		return rpcError(spec.ErrInvalidParams, "push config token and authentication: %d bytes, more than the %d allowed", cred, maxPushCredBytes)
	case len(c.ID) > 256:
		return rpcError(spec.ErrInvalidParams, "push config id: %d bytes, more than the 256 allowed", len(c.ID))
	}
	return checkWebhook(ctx, p.res, c.URL, p.private)
}

// save stores config c (checked) for task id, whose updates are pushed
// from the event after seq from on (or from where the task's pushes
// stand, if it has configs already), and has this process push them.
func (p *pusher) save(ctx context.Context, id spec.TaskID, c *spec.PushConfig, from int64) (*spec.PushConfig, error) {
	ref, ok := parseTaskID(id)
	if !ok {
		return nil, spec.ErrTaskNotFound
	}
	saved := *c
	saved.TaskID = id
	if saved.ID == "" {
		saved.ID = "push_" + p.r.NewID()
	}
	have, err := p.configs(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(have) >= maxPushConfigs && !slices.ContainsFunc(have, func(h *spec.PushConfig) bool { return h.ID == saved.ID }) {
		return nil, rpcError(spec.ErrInvalidParams, "task %s has %d push configs, the most it can have: delete one first (DeleteTaskPushNotificationConfig)", id, len(have))
	}
	b, err := json.Marshal(&saved)
	if err != nil {
		return nil, rpcError(spec.ErrInvalidParams, "the push config does not encode: %v", err)
	}
	if _, err := p.recs.PutRecord(ctx, &session.Record{SessionID: ref.session, Kind: kindPushConfig, Key: string(id), ID: saved.ID, Data: b, Version: -1}); err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the push config could not be stored", Err: err}
	}
	st, _ := json.Marshal(pushState{Pushed: from})
	_, err = p.recs.PutRecord(ctx, &session.Record{SessionID: ref.session, Kind: kindPushing, Key: string(id), Data: st})
	if err != nil && !errors.Is(err, session.ErrExists) {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the push config could not be stored", Err: err}
	}
	p.kick(session.TenantOf(ctx), id)
	return &saved, nil
}

// deleteConfig removes push config cid of task id (none: nothing).
func (p *pusher) deleteConfig(ctx context.Context, id spec.TaskID, cid string) error {
	ref, ok := parseTaskID(id)
	if !ok {
		return spec.ErrTaskNotFound
	}
	err := p.recs.DeleteRecord(ctx, ref.session, kindPushConfig, string(id), cid)
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		return &agentrt.Error{Kind: agentrt.FailStore, Msg: "the push config could not be deleted", Err: err}
	}
	return nil
}

// kick has this process push task id's updates now, if nobody does.
func (p *pusher) kick(tenant string, id spec.TaskID) {
	select {
	case p.kicks <- taskKick{tenant, id}:
	default: // the next poll finds it
	}
}

// run pushes the updates of the tasks this process takes up, until ctx
// ends (Shutdown): at once the tasks it was kicked for, and every poll
// any task that nobody pushes and whose session moved on. It returns
// once its followers have handed their tasks over.
func (p *pusher) run(ctx context.Context) {
	defer p.wg.Wait()
	t := time.NewTicker(p.poll)
	defer t.Stop()
	p.sweep(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.sweep(ctx)
		case k := <-p.kicks:
			ref, _ := parseTaskID(k.id)
			tctx := session.WithTenant(ctx, k.tenant)
			recs, err := p.recs.SessionRecords(tctx, ref.session, kindPushing, string(k.id))
			if err != nil {
				p.log.Warn("a2a: push state", "task", k.id, "err", err)
				continue
			}
			for _, rec := range recs {
				p.consider(ctx, rec, true)
			}
		}
	}
}

// sweep takes up the tasks whose updates nobody pushes (see consider).
func (p *pusher) sweep(ctx context.Context) {
	recs, err := p.recs.KindRecords(ctx, kindPushing, 0)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("a2a: the tasks to push", "err", err)
		}
		return
	}
	for _, rec := range recs {
		p.consider(ctx, rec, false)
	}
}

// consider takes up the task of push state rec, unless this process
// pushes it already or another does (its lease is live and its process
// not known gone), or — for a task it was not kicked for — its session
// has nothing to push: no run, and no event after the last pushed.
func (p *pusher) consider(ctx context.Context, rec session.Record, kicked bool) {
	k := taskKick{rec.Tenant, spec.TaskID(rec.Key)}
	p.mu.Lock()
	busy := p.following[k]
	p.mu.Unlock()
	if busy || ctx.Err() != nil {
		return
	}
	var st pushState
	if err := json.Unmarshal(rec.Data, &st); err != nil {
		p.log.Warn("a2a: a push state that does not decode", "task", rec.Key, "err", err)
		return
	}
	now := time.Now()
	if st.Owner != "" && st.Owner != p.r.Owner() && now.Before(st.Until) && !agentrt.OwnerGone(st.Owner) {
		return
	}
	tctx := session.WithTenant(ctx, rec.Tenant)
	sess, err := p.r.Store().GetSession(tctx, rec.SessionID)
	if err != nil {
		return // deleted with its records, or a store that hiccupped: the next poll
	}
	tasks := p.tasks(sess.Agent)
	if tasks == nil || !kicked && sess.Status != session.StatusRunning && sess.LastSeq <= st.Pushed {
		return
	}
	st.Owner, st.Until = p.r.Owner(), now.Add(p.lease)
	f := &follower{p: p, tasks: tasks, rec: rec, st: st, tenant: rec.Tenant}
	if err := f.save(tctx); err != nil {
		return // another took it first
	}
	p.mu.Lock()
	p.following[k] = true
	p.mu.Unlock()
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.following, k)
			p.mu.Unlock()
		}()
		f.follow(tctx)
	})
}

// follower pushes the updates of one task while this process holds its
// push state's lease.
type follower struct {
	p      *pusher
	tasks  *taskStore
	tenant string

	mu  sync.Mutex     // serializes the writes of rec (the follow, the renewals)
	rec session.Record // guarded by mu: the push state record as last written
	st  pushState      // guarded by mu
}

// save writes f's state over the record as f last wrote it (an error if
// another process wrote it since: it took the task over).
func (f *follower) save(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saveLocked(ctx)
}

// saveLocked is save with f.mu held. The write outlives ctx (for a
// while): what was pushed before a shutdown is recorded, and the task
// handed over, rather than left to the lease's end.
func (f *follower) saveLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	b, _ := json.Marshal(f.st)
	r := f.rec
	r.Data = b
	v, err := f.p.recs.PutRecord(ctx, &r)
	if err != nil {
		return err
	}
	r.Version = v
	f.rec = r
	return nil
}

// follow pushes the task's updates from the session's log: its events
// from the task's turn on are translated as a stream of the task would
// have them, and those after the last event pushed are pushed, to the
// task's end (the record goes: nothing is left to push) or its wait for
// a person (the task is let go of: whoever sees its session move on
// takes it up). The lease is renewed every third of its length; losing
// it, or ctx ending, stops the follow, which then lets the task go for
// another process to take up at once.
func (f *follower) follow(ctx context.Context) {
	ref, _ := parseTaskID(spec.TaskID(f.rec.Key))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after the cancel, which ends the renewals
	defer cancel()
	seen := make(chan struct{}, 1) // an event came since the last renewal
	wg.Go(func() { f.renew(ctx, cancel, seen) })

	tr := &translator{info: spec.TaskInfo{TaskID: spec.TaskID(f.rec.Key), ContextID: ref.session}, input: ref.input, quiet: true}
	f.mu.Lock()
	pushed := f.st.Pushed
	f.mu.Unlock()
	// The log so far, then the events to come: a task that waits for a
	// person at the end of what is stored is let go of.
	last, waiting := ref.after, false
	step := func(ev *session.Event) (done bool) {
		select {
		case seen <- struct{}{}:
		default:
		}
		last = ev.Seq
		out, end := tr.batch(nil, []*session.Event{ev})
		if len(out) > 0 {
			waiting = false
		}
		fresh := ev.Seq > pushed
		if fresh {
			f.push(ctx, out)
			if ctx.Err() != nil {
				// Stopped while it pushed: the next pusher pushes these
				// updates again rather than lose them.
				f.letGo(ctx)
				return true
			}
			pushed = ev.Seq
		}
		switch {
		case end && terminal(out):
			f.finish(ctx)
			return true
		case end:
			// It waits for a person (or its run paused): whatever comes
			// next in the log says whether it goes on.
			tr.resumed()
			waiting = true
		case fresh && len(out) > 0:
			f.advance(ctx, ev.Seq, false)
		}
		return false
	}
	for ev, err := range f.p.r.Store().Events(ctx, ref.session, ref.after) {
		if err != nil {
			f.letGo(ctx)
			return
		}
		if step(ev) {
			return
		}
	}
	if waiting {
		f.advance(ctx, last, true)
		return
	}
	for ev, err := range f.p.r.Watch(ctx, ref.session, last) {
		if err != nil {
			break
		}
		if ev.Seq == 0 {
			continue // a token: the chunks are not pushed
		}
		if step(ev) {
			return
		}
		if waiting {
			f.advance(ctx, ev.Seq, true)
			return
		}
	}
	f.letGo(ctx)
}

// renew renews the lease every third of its length until ctx ends, and
// cancels the follow if another process took the task over. A task that
// has had no event since the last renewal is looked up: one that ended
// without a run (its input refused) has its end pushed.
func (f *follower) renew(ctx context.Context, cancel func(), seen <-chan struct{}) {
	t := time.NewTicker(f.p.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case <-seen:
		default:
			if f.refused(ctx) {
				cancel()
				return
			}
		}
		f.mu.Lock()
		f.st.Until = time.Now().Add(f.p.lease)
		err := f.saveLocked(ctx)
		f.mu.Unlock()
		if err != nil {
			cancel()
			return
		}
	}
}

// refused reports whether the task ended without a run (the gateway
// refused its input), having pushed its end if so.
func (f *follower) refused(ctx context.Context) bool {
	ref, _ := parseTaskID(spec.TaskID(f.rec.Key))
	d, err := f.tasks.derive(ctx, ref)
	if err != nil || !d.ended || d.tr.runID != "" {
		return false
	}
	f.push(ctx, []spec.Event{&spec.TaskStatusUpdateEvent{TaskID: d.task.ID, ContextID: d.task.ContextID, Status: d.task.Status}})
	f.finish(ctx)
	return true
}

// push sends evs, updates of the task, to its configs (in order, each
// config in turn, waiting for each webhook), but the chunks of the
// answer streamed before its end. A webhook that fails is logged: the
// task goes on.
func (f *follower) push(ctx context.Context, evs []spec.Event) {
	var send []spec.Event
	for _, ev := range evs {
		if a, ok := ev.(*spec.TaskArtifactUpdateEvent); ok && !a.LastChunk {
			continue
		}
		send = append(send, ev)
	}
	if len(send) == 0 {
		return
	}
	id := spec.TaskID(f.rec.Key)
	cfgs, err := f.p.configs(ctx, id)
	if err != nil {
		f.p.log.Warn("a2a: push configs", "task", id, "err", err)
		return
	}
	for _, ev := range send {
		for _, c := range cfgs {
			pctx, cancel := context.WithTimeout(ctx, f.p.timeout)
			err := f.p.sender.SendPush(pctx, c, ev)
			cancel()
			if err != nil && ctx.Err() == nil {
				f.p.log.Warn("a2a: push notification", "task", id, "url", c.URL, "err", err)
			}
		}
	}
}

// advance records that the updates of the events up to seq are pushed,
// and, when release is set, lets the task go.
func (f *follower) advance(ctx context.Context, seq int64, release bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Pushed = max(f.st.Pushed, seq)
	if release {
		f.st.Owner, f.st.Until = "", time.Time{}
	}
	if err := f.saveLocked(ctx); err != nil && ctx.Err() == nil && release {
		f.p.log.Warn("a2a: push state", "task", f.rec.Key, "err", err)
	}
}

// finish removes the task's push state: its end is pushed.
func (f *follower) finish(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.p.recs.DeleteRecord(ctx, f.rec.SessionID, kindPushing, f.rec.Key, ""); err != nil && !errors.Is(err, session.ErrNotFound) {
		f.p.log.Warn("a2a: push state", "task", f.rec.Key, "err", err)
	}
}

// letGo lets the task go (its follow stopped before its end: a shutdown,
// the lease lost, the store failing), so that another process takes it
// up at once, unless another has already.
func (f *follower) letGo(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Owner, f.st.Until = "", time.Time{}
	_ = f.saveLocked(ctx)
}

// terminal reports whether evs end the task (a terminal status).
func terminal(evs []spec.Event) bool {
	for _, ev := range evs {
		if s, ok := ev.(*spec.TaskStatusUpdateEvent); ok && s.Status.State.Terminal() {
			return true
		}
	}
	return false
}

// pushConfigError is what a push method says of a config it cannot find.
func pushConfigError(id spec.TaskID, cid string) error {
	return rpcError(spec.ErrInvalidParams, "task %s has no push config %q (ListTaskPushNotificationConfigs lists its configs)", id, cid)
}
