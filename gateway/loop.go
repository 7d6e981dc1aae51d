package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/stack"
	"github.com/agentrt/agentrt/session"
)

// Run serves the inboxes of the store — every tenant's — until ctx ends:
// a source whose inputs have settled (see Config.Debounce) gets a worker,
// up to Config.Workers at once, one turn at a time per source. Several
// processes may run it on one store: an input is answered exactly once,
// and a source's session runs in one process at a time. It first resumes
// the runs whose process stopped, a crashed gateway's turns among them
// (Runner.Recover; a failure goes to Config.OnError). It returns when ctx
// ends and its workers have stopped (a turn in flight is left to the
// runner: Runner.Close stops it; a module of it that ignores its context
// is abandoned after Config.ShutdownGrace, reported to Config.OnError,
// its inputs left pending), or at once if Run is running already.
func (g *Gateway) Run(ctx context.Context) error {
	g.mu.Lock()
	if g.running {
		g.mu.Unlock()
		return errors.New("gateway: Run is running already")
	}
	g.running = true
	g.mu.Unlock()
	defer func() {
		g.nextLook.Store(0)
		g.mu.Lock()
		g.running = false
		g.mu.Unlock()
	}()
	var wg sync.WaitGroup
	g.mu.Lock()
	g.runCtx, g.workers = ctx, &wg
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.runCtx, g.workers = nil, nil // Submit starts no worker from now on
		g.mu.Unlock()
		wg.Wait()
	}()
	g.resumeStopped(ctx)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.wake:
		case <-timer.C:
		}
		g.nextLook.Store(math.MaxInt64) // looking now: an input stored meanwhile wakes it again
		next := g.cfg.Poll
		states, err := g.inbox.PendingSources(ctx, 0)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if err != nil {
			g.report("", fmt.Errorf("list the inbox: %w", err))
			timer.Reset(next)
			continue
		}
		now := g.now()
		g.forgetIdle(states)
		var left map[skey]bool // waiting for a worker
		for _, st := range states {
			k := skey{st.Tenant, st.Source}
			settle := g.earliestSettle(st.Source, st.First, st.Last, now)
			// What the source's state allows, and the worker taken, in one
			// hold of the lock: Submit's dispatch starts a worker for a
			// source too, and one that came between a look at serving and
			// the worker's entry made two workers of one source (two turns
			// of one input, the second interrupting the first).
			var s *serving
			g.mu.Lock()
			cur, busy := g.serving[k]
			if busy {
				cur.recheck = true
			}
			until, backing := g.backoff[k]
			full := len(g.serving) >= g.cfg.Workers
			if full && !busy {
				g.starved = true
				if left == nil {
					left = make(map[skey]bool)
				}
				left[k] = true
			}
			switch {
			case busy || full:
			case backing && now.Before(until):
				next = min(next, until.Sub(now))
			case settle > 0:
				next = min(next, settle)
			default:
				s = &serving{}
				g.serving[k] = s
				delete(g.backoff, k)
			}
			g.mu.Unlock()
			if s == nil {
				continue
			}
			wg.Go(func() {
				stack.Presize()
				g.serve(ctx, k, s, serveOpts{})
			})
		}
		g.noteFull(left)
		next = max(next, time.Millisecond)
		g.nextLook.Store(g.now().Add(next).UnixNano())
		timer.Reset(next)
	}
}

// forgetIdle drops the back-off of the sources that have nothing pending
// (states lists every source that has): another process answered them,
// and a note kept for each would grow with every source it serves.
func (g *Gateway) forgetIdle(states []session.SourceState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.backoff) == 0 {
		return
	}
	pending := make(map[skey]bool, len(states))
	for _, st := range states {
		pending[skey{st.Tenant, st.Source}] = true
	}
	for k := range g.backoff {
		if !pending[k] {
			delete(g.backoff, k)
		}
	}
}

// settleWait is how long source's pending inputs, the first of which came
// at first and the last at last, must still wait before their turn:
// zero once the source has been quiet for its debounce window, or its
// first input has waited MaxWait.
func (g *Gateway) settleWait(source, agent string, first, last, now time.Time) time.Duration {
	set := g.settings(source, agent)
	debounce, maxWait := set.Debounce, set.MaxWait
	if debounce <= 0 {
		return 0
	}
	quiet := now.Sub(last)
	waited := now.Sub(first)
	if quiet >= debounce || waited >= maxWait {
		return 0
	}
	return min(debounce-quiet, maxWait-waited)
}

// earliestSettle is settleWait for the agent whose settings let source
// settle soonest: the inbox's summary does not say which agent the
// newest input is for. The worker checks with that input's own settings,
// and comes back later if the source has not settled for them.
func (g *Gateway) earliestSettle(source string, first, last, now time.Time) time.Duration {
	wait := g.settleWait(source, "", first, last, now)
	for agent := range g.cfg.Agents {
		wait = min(wait, g.settleWait(source, agent, first, last, now))
	}
	return wait
}

// errClaimed says another runner serves the source (holds its claim):
// the inputs stay pending, for it to answer.
var errClaimed = errors.New("another runner serves the source")

// claimName is the name of source's claim (see Runner.Claim).
func claimName(source string) string { return "gateway.source:" + source }

// watch looks at source k's inbox every Poll while s serves it, for
// newer input than a running turn answers that this process was not told
// of — submitted by another process — and applies the source's policy
// to it, as Submit does to input submitted here. stop ends the watch.
func (g *Gateway) watch(ctx context.Context, k skey, s *serving) (stop func()) {
	// A timer rather than a goroutine: most turns end before the first
	// look.
	var (
		mu      sync.Mutex
		stopped bool
		looking sync.WaitGroup
		t       *time.Timer
	)
	mu.Lock() // t is set before the first look reads it
	defer mu.Unlock()
	t = time.AfterFunc(g.cfg.Poll, func() {
		mu.Lock()
		if stopped || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		looking.Add(1)
		mu.Unlock()
		defer looking.Done()
		g.look(ctx, k, s)
		mu.Lock()
		if !stopped {
			t.Reset(g.cfg.Poll)
		}
		mu.Unlock()
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		looking.Wait()
	}
}

// look is one look of watch at source k's inbox: at the inputs newer
// than the turn's, and than the last look's — a bounded read each time,
// however much the source piles up.
func (g *Gateway) look(ctx context.Context, k skey, s *serving) {
	foreign := g.foreign()
	g.mu.Lock()
	after, running := max(s.upto, s.looked), s.turn != nil
	same := foreign != -1 && foreign == s.foreign
	g.mu.Unlock()
	if !running || same {
		// No turn, or no other process has written since the last look
		// that read: input submitted here reached the turn through
		// Submit (arrived).
		return
	}
	newer, err := g.inbox.Inputs(ctx, k.source, after, g.readLimit(k.source))
	if err != nil {
		return // the worker's next read of the inbox reports it; the next look reads again
	}
	g.mu.Lock()
	if s.turn != nil {
		s.foreign = foreign // read up to here
	}
	g.mu.Unlock()
	for _, in := range newer {
		if in.State == session.InputPending && in.Corrupt == "" {
			if err := g.apply(ctx, k, s, in); err != nil && !isRejected(err) {
				g.report(k.source, err)
			}
		}
	}
	if len(newer) > 0 {
		g.mu.Lock()
		s.looked = max(s.looked, newer[len(newer)-1].Seq)
		g.mu.Unlock()
	}
}

// lookAnyway is a serving's foreign count that no store's matches: the
// watch's next look reads.
const lookAnyway = -2

// foreign is the inbox's count of other processes' writes
// (session.Foreign); -1 when it cannot tell.
func (g *Gateway) foreign() int64 {
	if f, ok := g.inbox.(session.Foreign); ok {
		return f.Foreign()
	}
	return -1
}

// isRejected reports whether err is apply's refusal of an input by the
// reject policy: the submitter's news, not a failure.
func isRejected(err error) bool {
	return agentrt.AsError(err).ErrorCode() == agentrt.CodeInputRejected
}

// errElsewhere says the source's session runs elsewhere (another process,
// a person's run): the worker leaves the inputs pending, to be tried
// again later.
var errElsewhere = errors.New("the session runs elsewhere")

// serveOpts change how serve serves a source: Run's workers use the zero
// value; Answer sets them all.
type serveOpts struct {
	eager bool                      // start at once, without waiting for the source to settle
	until string                    // stop once this input is not pending any more
	yield func(*session.Event) bool // run the agent on serve's goroutine, handing its events here
}

// serve runs the turns of source k while its inputs keep coming and have
// settled, restarting a turn that newer input interrupted. It returns the
// first failure, which it has reported (OnError) too.
func (g *Gateway) serve(ctx context.Context, k skey, s *serving, o serveOpts) (failed error) {
	done := false // it ended as the source had nothing pending
	defer func() {
		// Wake the loop, unless the worker ended as the source had nothing
		// pending and the loop saw nothing since that it left for later.
		// A worker that failed is followed by another after a poll, not at
		// once: a store that refuses writes (or reads) would otherwise be
		// asked again and again as fast as it answers.
		g.mu.Lock()
		if failed != nil && !done {
			if until := g.now().Add(g.cfg.Poll); g.backoff[k].Before(until) {
				g.backoff[k] = until
			}
		}
		delete(g.serving, k)
		again := !done || s.recheck || g.starved
		if again {
			g.starved = false
		}
		g.mu.Unlock()
		if again {
			g.poke()
		}
	}()
	fail := func(err error) {
		g.report(k.source, err)
		if failed == nil {
			failed = err
		}
	}
	ctx = session.WithTenant(ctx, k.tenant)
	// One process at a time serves a source: the others leave it be
	// while this one holds its claim.
	ctx, release, err := g.r.Claim(ctx, claimName(k.source))
	if err != nil {
		if agentrt.AsError(err).ErrorCode() == agentrt.CodeLeaseHeld {
			g.mu.Lock()
			g.backoff[k] = g.now().Add(g.cfg.Poll)
			g.mu.Unlock()
			return fmt.Errorf("%w: %w", errClaimed, err)
		}
		fail(fmt.Errorf("claim the source: %w", err))
		return failed
	}
	defer release()
	stop := g.watch(ctx, k, s)
	defer stop()
	var carried []session.InboxInput // answered by the interrupted turn this one restarts
	restart := 0
	turnID := "" // the id of the turn a restart continues
	limit := g.readLimit(k.source)
	for ctx.Err() == nil {
		// The oldest inputs, as many as a turn may take: a source that
		// piled up more is read a turn at a time.
		pending, err := g.inbox.Pending(ctx, k.source, limit)
		if err != nil {
			fail(fmt.Errorf("read the inbox: %w", err))
			return failed
		}
		if pending, err = g.dropCorrupt(ctx, k.source, pending); err != nil {
			fail(err)
			return failed
		}
		if len(pending) == 0 {
			done = true
			return failed
		}
		if o.until != "" && !slices.ContainsFunc(pending, func(in session.InboxInput) bool { return in.ID == o.until }) {
			return failed
		}
		newest := pending[len(pending)-1]
		if wait := g.settleWait(k.source, newest.Metadata[agentKey], pending[0].At, newest.At, g.now()); !o.eager && wait > 0 {
			if restart > 0 {
				// A restart waits here, for the source to settle, and is
				// still the turn it restarts: what it carries (the inputs
				// its interrupted run answered, the restart count, the
				// turn's id) is this worker's, and would be lost with it.
				if !sleep(ctx, wait) {
					return failed // shutting down: what is pending stays so
				}
				continue
			}
			g.mu.Lock()
			g.backoff[k] = g.now().Add(wait)
			g.mu.Unlock()
			return failed // the loop comes back when it has settled
		}
		// Every input pending now is older than the turn, for its policy,
		// even one of its session that a later turn answers, or one past
		// what was read.
		upto := newest.Seq
		if len(pending) == limit {
			st, err := g.inbox.PendingOf(ctx, k.source)
			if err != nil {
				fail(fmt.Errorf("read the inbox: %w", err))
				return failed
			}
			upto = max(upto, st.Version)
		}
		// A turn answers one session's inputs: the oldest pending input's,
		// up to the first input for another session, which the next turn
		// answers.
		if i := slices.IndexFunc(pending, func(in session.InboxInput) bool { return in.SessionID != pending[0].SessionID }); i > 0 {
			pending = pending[:i]
		}
		// And no more than its source may pile up: the rest waits for the
		// next turn.
		pending = g.fit(k.source, pending)
		if len(carried) > 0 && carried[0].SessionID != pending[0].SessionID {
			carried, restart = nil, 0 // what interrupted the turn is gone
		}
		if restart == 0 {
			turnID = "turn_" + g.newID()
		}
		inputs := append(slices.Clone(carried), pending...)
		t := &Turn{ID: turnID, Tenant: k.tenant, Source: k.source, Session: pending[0].SessionID, Inputs: inputs,
			Merged: g.merge.Merge(inputs), Restart: restart, g: g, s: s, k: k, delivered: len(carried), yield: o.yield}
		g.mu.Lock()
		s.turn, s.interrupted, s.interruptBy, s.run, s.steer, s.upto, s.applied, s.looked = t, false, nil, nil, nil, upto, nil, 0
		// The watch's first look reads, whatever the store's count of
		// foreign writes: input submitted here between the read above
		// and now met no turn to apply the policy to (Submit's apply).
		s.foreign = lookAnyway
		g.mu.Unlock()
		err = t.runGroups(ctx, g.groups)
		g.mu.Lock()
		interrupted := s.interrupted
		s.turn, s.run = nil, nil
		g.mu.Unlock()
		still, perr := g.stillPending(ctx, k.source, t.Inputs)
		switch {
		case perr != nil && ctx.Err() != nil:
			return failed // shutting down: what is pending stays so
		case perr != nil:
			fail(perr)
			return failed
		case errors.Is(err, errElsewhere):
			g.mu.Lock()
			g.backoff[k] = g.now().Add(g.cfg.Poll)
			g.mu.Unlock()
			if failed == nil {
				failed = err
			}
			return failed
		case err != nil && ctx.Err() != nil:
			return cmp.Or(failed, err) // shutting down: the inputs stay pending
		case err != nil && agentrt.AsError(err).Kind == agentrt.FailStore:
			// The store refused the turn's writes (a full disk, a
			// database gone): not its inputs' fault. Those still
			// pending stay so, for a turn after a poll; a run that had
			// begun is resumed by the runner once the store accepts
			// writes.
			fail(err)
			return failed
		case err != nil:
			g.setAside(ctx, k.source, still, agentrt.CodeModuleFailed, err.Error())
			if failed == nil {
				failed = err
			}
			carried, restart = nil, 0
		case t.stopped != "":
			g.setAside(ctx, k.source, still, agentrt.CodeTurnStopped, t.stopped)
			if failed == nil {
				failed = &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeTurnStopped, Msg: t.stopped}
			}
			carried, restart = nil, 0
		case interrupted:
			// Restart from the head of the pipeline with every input:
			// those the agent answered already, and those that came.
			carried = answered(t.Inputs, still)
			restart++
		default:
			carried, restart = nil, 0
		}
	}
	return failed
}

// fit returns the oldest of pending, a turn's inputs for source, that
// its bounds (MaxPending, MaxPendingBytes) let one turn take: at least
// one.
func (g *Gateway) fit(source string, pending []session.InboxInput) []session.InboxInput {
	set := g.settings(source, pending[0].Metadata[agentKey])
	size := 0
	for i, in := range pending {
		size += in.Size()
		if i > 0 && (i >= set.MaxPending || size > set.MaxPendingBytes) {
			return pending[:i]
		}
	}
	return pending
}

// sleep waits for d, or until ctx ends: it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// dropCorrupt sets aside the inputs among pending whose stored content
// could not be decoded (session.InboxInput.Corrupt): refused with the
// reason, reported; the rest go on.
func (g *Gateway) dropCorrupt(ctx context.Context, source string, pending []session.InboxInput) ([]session.InboxInput, error) {
	if !slices.ContainsFunc(pending, func(in session.InboxInput) bool { return in.Corrupt != "" }) {
		return pending, nil
	}
	var ok []session.InboxInput
	for _, in := range pending {
		if in.Corrupt == "" {
			ok = append(ok, in)
			continue
		}
		reason := "its stored content could not be decoded: " + in.Corrupt
		// Coded as every refusal is (see refusal): the store lost it, the
		// source's policy did not refuse it.
		if err := g.inbox.Refuse(ctx, []string{in.ID}, agentrt.CodeStore+": "+reason); err != nil {
			return nil, fmt.Errorf("set aside input %s: %w", in.ID, err)
		}
		g.changes.signal(in.ID)
		g.report(source, fmt.Errorf("input %s set aside: %s", in.ID, reason))
	}
	return ok, nil
}

// stillPending returns the ids of inputs that are still pending, of
// inputs, a turn's: the oldest of the source's pending inputs when it
// began, so that those still pending are among the oldest now.
func (g *Gateway) stillPending(ctx context.Context, source string, inputs []session.InboxInput) (map[string]bool, error) {
	now, err := g.inbox.Pending(ctx, source, len(inputs))
	if err != nil {
		return nil, fmt.Errorf("read the inbox: %w", err)
	}
	ids := make(map[string]bool, len(now))
	for _, in := range now {
		ids[in.ID] = true
	}
	return ids, nil
}

// answered returns the inputs that are not pending any more.
func answered(inputs []session.InboxInput, pending map[string]bool) []session.InboxInput {
	var out []session.InboxInput
	for _, in := range inputs {
		if !pending[in.ID] {
			out = append(out, in)
		}
	}
	return out
}

// setAside refuses the turn's inputs still pending, with the reason: a
// failed or stopped turn does not try them again.
func (g *Gateway) setAside(ctx context.Context, source string, pending map[string]bool, code, reason string) {
	var ids []string
	for id := range pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) > 0 {
		if err := g.inbox.Refuse(ctx, ids, code+": "+reason); err != nil {
			g.report(source, fmt.Errorf("set aside inputs %s: %w", strings.Join(ids, ", "), err))
		} else {
			g.changes.signal(ids...)
		}
	}
	g.report(source, &agentrt.Error{Kind: agentrt.FailInternal, Code: code, Msg: reason})
}

// report tells Config.OnError of a failure that is nobody's call's.
func (g *Gateway) report(source string, err error) {
	if g.cfg.OnError != nil {
		g.cfg.OnError(source, err)
	}
}

// poke wakes Run's loop.
func (g *Gateway) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// agentModule is the built-in module that runs the agent: the turn's
// inputs not yet in the session (the first turn's all of them; a
// restarted turn's those that came since) become one user message, and
// the run's first commit marks them answered.
type agentModule struct{}

func (agentModule) Name() string { return "agent" }
func (agentModule) Order() int   { return AgentOrder }

func (agentModule) Run(ctx context.Context, t *Turn) error { return t.g.runAgent(ctx, t) }

// agentResult is what the agent module's run gave.
type agentResult struct {
	res *agentrt.Result
}

// Result returns the agent run's outcome, once the agent module ran.
func (t *Turn) Result() (*agentrt.Result, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result == nil {
		return nil, false
	}
	return t.result.res, true
}

func (g *Gateway) runAgent(ctx context.Context, t *Turn) error {
	fresh := t.Inputs[t.delivered:]
	if len(fresh) == 0 {
		return nil
	}
	m := g.merge.Merge(fresh)
	in := agentrt.Input{Text: m.Text, Media: m.Media, Source: t.Source, Inputs: make([]string, len(fresh)), TurnID: t.ID}
	for i, x := range fresh {
		in.Inputs[i] = x.ID
	}
	if ct := t.Merged.Metadata[clientToolsKey]; ct != "" {
		if err := json.Unmarshal([]byte(ct), &in.ClientTools); err != nil {
			return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadClientTools, Msg: "the input's client tools", Err: err}
		}
	}
	if agent := t.Merged.Metadata[agentKey]; agent != "" {
		in.Agent = agent
	} else if _, err := g.r.Store().GetSession(ctx, t.Session); errors.Is(err, session.ErrNotFound) {
		if in.Agent, err = g.r.DefaultAgent(); err != nil {
			return err
		}
	}
	policy := g.settings(t.Source, t.Merged.Metadata[agentKey]).Policy
	if t.yield != nil {
		return g.runInline(ctx, t, in, policy)
	}
	var h *agentrt.Run
	for {
		var err error
		h, err = g.r.Start(ctx, t.Session, in)
		if err == nil {
			break
		}
		if agentrt.AsError(err).ErrorCode() == agentrt.CodeWaiting && g.settings(t.Source, t.Merged.Metadata[agentKey]).Prompts == PromptsAnswer {
			run, answered, aerr := g.answerPrompt(ctx, t, in)
			if aerr != nil {
				return aerr
			}
			if answered && run == nil {
				return nil // the session waits on more answers
			}
			if answered {
				h = run
				break
			}
		}
		if err := g.notStarted(ctx, t, policy, err); err != nil {
			return err
		}
	}
	g.track(t, h)
	res, err := h.Wait(ctx)
	t.mu.Lock()
	t.result = &agentResult{res: res}
	t.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// Metadata keys an input may carry to say who sent it (a chat's
// channels set them): an answer made of the input records them (By).
const (
	MetaSender     = "sender"
	MetaSenderName = "sender_name"
)

// answerPrompt answers the oldest prompt t's session waits on with the
// turn's input (Prompts: answer), the inputs marked answered in the
// resolution's commit. It reports answered false when there is none to
// answer this way (the turn brings files, or the session waits on no
// prompt, or its prompt was answered meanwhile): the source's policy
// decides then. run is the run that goes on when this was the last
// answer the session waited for, nil while it waits on more.
func (g *Gateway) answerPrompt(ctx context.Context, t *Turn, in agentrt.Input) (run *agentrt.Run, answered bool, err error) {
	if len(in.Media) > 0 || strings.TrimSpace(in.Text) == "" {
		return nil, false, nil
	}
	st, err := g.r.Load(ctx, t.Session)
	if err != nil {
		return nil, false, err
	}
	var rid string
	for _, q := range st.Requests {
		if q.Kind == session.RequestPrompt {
			rid = q.ID
			break
		}
	}
	if rid == "" {
		return nil, false, nil
	}
	by := cmp.Or(t.Merged.Metadata[MetaSenderName], t.Merged.Metadata[MetaSender])
	if by == "" {
		by = "source " + t.Source
	} else {
		by += " (" + t.Source + ")"
	}
	res, err := g.r.ResolveAndContinue(ctx, t.Session, rid, agentrt.Resolution{Decision: "answer", Text: in.Text, By: by, Inputs: in.Inputs})
	if err != nil {
		if c := agentrt.AsError(err).ErrorCode(); c == agentrt.CodeAlreadyResolved || c == agentrt.CodeUnknownRequest {
			return nil, false, nil // answered meanwhile: the policy decides
		}
		return nil, false, err
	}
	t.delivered = len(t.Inputs)
	return res.Run, true, nil
}

// notStarted deals with err, which kept the turn's agent run from
// starting: nil to try again, once the session is free (by the source's
// policy, the run in the way was interrupted, or a crashed run ended),
// else the error that ends the turn.
func (g *Gateway) notStarted(ctx context.Context, t *Turn, policy Policy, err error) error {
	switch agentrt.AsError(err).ErrorCode() {
	case agentrt.CodeBusy, agentrt.CodeLeaseHeld, agentrt.CodeWaiting:
		// The session runs elsewhere, or waits for a person.
		if decide(policy, sessionBusy) == actWait {
			return fmt.Errorf("%w: %w", errElsewhere, err)
		}
		if _, ierr := g.r.Interrupt(ctx, t.Session, "newer input from source "+t.Source); ierr != nil &&
			agentrt.AsError(ierr).ErrorCode() != agentrt.CodeNotRunning {
			return fmt.Errorf("%w: %w", errElsewhere, ierr)
		}
	case agentrt.CodeUnfinishedRun:
		// Its last run stopped with its process: it ends first.
		rh, rerr := g.r.StartResume(ctx, t.Session)
		if rerr != nil {
			return fmt.Errorf("%w: %w", errElsewhere, rerr)
		}
		if _, werr := rh.Wait(ctx); werr != nil && ctx.Err() != nil {
			return werr
		}
	default:
		return err
	}
	return ctx.Err()
}

// track records h as the turn's agent run, which newer input from the
// source interrupts; input that came while it started interrupts it now.
func (g *Gateway) track(t *Turn, h *agentrt.Run) {
	g.mu.Lock()
	t.s.run = h
	interrupted, by := t.s.interrupted, slices.Clone(t.s.interruptBy)
	steer := t.s.steer
	t.s.steer = nil
	g.mu.Unlock()
	if interrupted {
		h.InterruptFor("newer input from source "+t.Source, by)
	}
	for _, in := range steer {
		if slices.ContainsFunc(t.Inputs, func(x session.InboxInput) bool { return x.ID == in.ID }) {
			continue // the turn answers it already
		}
		h.Steer(g.merge.Merge([]session.InboxInput{in}).Text, []string{in.ID})
	}
}

// runInline runs the turn's agent on the calling goroutine, as
// Runner.Run does, handing each event to the turn's yield (see Answer).
func (g *Gateway) runInline(ctx context.Context, t *Turn, in agentrt.Input, policy Policy) error {
	for {
		res := &agentrt.Result{SessionID: t.Session}
		started := false
		var runErr error
		for e, err := range g.r.Run(ctx, t.Session, in) {
			if err != nil {
				runErr = err
				break
			}
			if !started {
				started = true
				if h, ok := g.r.Active(ctx, t.Session); ok {
					g.track(t, h)
				}
			}
			switch d := e.Data.(type) {
			case *session.RunStarted:
				res.RunID = e.RunID
			case *session.Final:
				res.Text = d.Text
			case *session.RunFinished:
				res.Status, res.Reason, res.Usage = d.Status, d.Reason, d.Usage
			case *session.Error:
				res.Err = d
			}
			if !t.yield(e) {
				break // leaving Run's loop cancels the run
			}
		}
		if started {
			t.mu.Lock()
			t.result = &agentResult{res: res}
			t.mu.Unlock()
			if runErr != nil && ctx.Err() == nil {
				return runErr
			}
			return nil
		}
		if agentrt.AsError(runErr).ErrorCode() == agentrt.CodeWaiting && g.settings(t.Source, t.Merged.Metadata[agentKey]).Prompts == PromptsAnswer {
			run, answered, aerr := g.answerPrompt(ctx, t, in)
			if aerr != nil {
				return aerr
			}
			if answered && run == nil {
				return nil
			}
			if answered {
				g.track(t, run)
				for e, err := range run.Events(ctx) {
					if err != nil || !t.yield(e) {
						break
					}
				}
				r, err := run.Wait(ctx)
				t.mu.Lock()
				t.result = &agentResult{res: r}
				t.mu.Unlock()
				if err != nil && ctx.Err() == nil {
					return err
				}
				return nil
			}
		}
		if err := g.notStarted(ctx, t, policy, runErr); err != nil {
			return err
		}
	}
}
