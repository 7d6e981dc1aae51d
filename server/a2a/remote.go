package a2a

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/tool"
)

// RemoteChildPrefix begins the child_session of a delegation to a remote
// A2A agent in the calling session's log: "a2a:" and the remote task's id
// (or, for an agent that answers with a message and makes no task, the
// message's id).
const RemoteChildPrefix = "a2a:"

// remotePollEvery is how often a remote task is looked up while it is
// under way, when the agent does not stream (its card says so) and its
// answer did not settle it.
const remotePollEvery = time.Second

// RemoteInput is what the model passes to a remote A2A agent's tool.
type RemoteInput struct {
	// Task is the message for the remote agent.
	Task string `json:"task" jsonschema:"what to ask the remote agent"`
	// TaskID answers a question the remote agent asked (its task waits
	// for input): the id the earlier result gave.
	TaskID string `json:"task_id,omitempty" jsonschema:"to answer a question the remote agent asked: the task id the earlier result gave"`
}

// Remote is a remote A2A agent as a tool: a call sends the task to the
// agent, in the A2A context of the calling session (so that the remote
// agent keeps the conversation across calls), and returns its answer (the
// task's artifacts). A task that waits for input returns the question and
// its task id, for the next call to answer; a failed, rejected or
// canceled task is the call's error. The card is fetched on the first
// call; when it says the agent streams, the task's updates are followed
// as they come (SendStreamingMessage).
//
// The tool delegates (tool.Meta.Delegates): in a runtime, the calling
// session's log shows the remote task as a sub-agent's delegation —
// subagent_started naming the task (RemoteChildPrefix and its id),
// subagent_progress as its state changes, its answer streaming live as
// subagent_event tokens, then subagent_finished, subagent_paused (the
// agent asks something) or subagent_error. A call that runs again after
// its process stopped goes on with the task its earlier attempt started
// (GetTask, then SubscribeToTask) rather than start another; when the
// remote agent no longer knows that task (a2a-go's servers keep tasks in
// memory: it restarted), the message is sent again with the same message
// id, the call's idempotency key, for a server that recognises a retried
// message.
//
// url is the agent's A2A base URL (its card is at
// url/.well-known/agent-card.json); hc, when set, makes the requests (put
// credentials in its transport); description, when set, replaces the
// card's.
func Remote(name, url, description string, hc *http.Client) (tool.Tool, error) {
	if url == "" {
		return nil, fmt.Errorf("a2a agent %q: a url is required", name)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	r := &remote{name: name, url: strings.TrimRight(url, "/"), hc: hc}
	if description == "" {
		description = "Delegate a task to the remote agent " + name + " (A2A) and get its answer."
	}
	return tool.New(name, description, r.call, tool.Meta{Delegates: true})
}

type remote struct {
	name, url string
	hc        *http.Client

	mu        sync.Mutex
	client    *a2aclient.Client // guarded by mu; made on the first call
	streaming bool              // guarded by mu: the card says the agent streams
}

func (r *remote) connect(ctx context.Context) (*a2aclient.Client, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, r.streaming, nil
	}
	card, err := agentcard.NewResolver(r.hc).Resolve(ctx, r.url)
	if err != nil {
		return nil, false, fmt.Errorf("a2a agent %s: its card at %s: %w", r.name, r.url, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(r.hc))
	if err != nil {
		return nil, false, fmt.Errorf("a2a agent %s: %w", r.name, err)
	}
	r.client, r.streaming = c, card.Capabilities.Streaming
	return c, r.streaming, nil
}

func (r *remote) call(ctx context.Context, in RemoteInput) (string, error) {
	if strings.TrimSpace(in.Task) == "" {
		return "", errors.New("task: say what to ask the remote agent")
	}
	c, streaming, err := r.connect(ctx)
	if err != nil {
		return "", err
	}
	msg := spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart(in.Task))
	msg.TaskID = spec.TaskID(in.TaskID)
	if info, ok := tool.CallInfoFrom(ctx); ok {
		// One remote context per calling session: the remote agent keeps
		// the conversation. The call's idempotency key makes a retried
		// call one message.
		msg.ContextID = info.SessionID
		if info.IdempotencyKey != "" {
			msg.ID = messageID(info.IdempotencyKey, in)
		}
	}
	t := &remoteTask{r: r, c: c, streaming: streaming, d: tool.DelegationFrom(ctx), task: in.Task}
	if prev, ok := strings.CutPrefix(t.d.Previous(), RemoteChildPrefix); ok && prev != "" {
		if out, done, err := t.resume(ctx, spec.TaskID(prev), msg); done {
			return out, err
		}
	}
	if in.TaskID != "" {
		// An answer goes on with the task that asked.
		t.start(spec.TaskID(in.TaskID), true)
	}
	return t.follow(ctx, c.SendStreamingMessage(ctx, &spec.SendMessageRequest{Message: msg}), false)
}

// remoteTask is one call's view of the remote task it delegates to: what
// it knows of the task, and the delegation it reports to. It is used by
// the call's goroutine only.
type remoteTask struct {
	r         *remote
	c         *a2aclient.Client
	streaming bool
	d         *tool.Delegation // nil outside a runtime: reports nothing
	task      string           // what was asked

	id           spec.TaskID // the task, once known
	status       spec.TaskStatus
	artifacts    []remoteArtifact // in the order they came
	resubscribed bool             // a broken stream was followed again once
}

// remoteArtifact is an artifact's text as it stands.
type remoteArtifact struct {
	id   spec.ArtifactID
	text string
}

// start reports the delegation's start once the task is known.
func (t *remoteTask) start(id spec.TaskID, resumed bool) {
	if t.id != "" {
		return
	}
	t.id = id
	t.d.Start(t.r.name, RemoteChildPrefix+string(id), t.task, resumed)
}

// resume goes on with the task the call's earlier attempt started (its
// process stopped before the result was stored). done is false when there
// is nothing to go on with and msg is to be sent: the remote agent no
// longer knows the task, or msg answers the task's question and never
// reached it.
func (t *remoteTask) resume(ctx context.Context, id spec.TaskID, msg *spec.Message) (out string, done bool, err error) {
	got, err := t.c.GetTask(ctx, &spec.GetTaskRequest{ID: id})
	switch {
	case errors.Is(err, spec.ErrTaskNotFound):
		return "", false, nil
	case err != nil && ctx.Err() != nil:
		return "", true, err // canceled: the next attempt looks again
	case err != nil:
		t.start(id, true)
		out, err := t.fail(fmt.Errorf("a2a agent %s: looking up its task %s, which this call started before: %w", t.r.name, id, err))
		return out, true, err
	case msg.TaskID == id && waits(got.Status.State) &&
		!slices.ContainsFunc(got.History, func(m *spec.Message) bool { return m != nil && m.ID == msg.ID }):
		return "", false, nil
	}
	t.start(id, true)
	t.absorb(got)
	if settled(t.status.State) {
		out, err := t.outcome()
		return out, true, err
	}
	t.progress()
	out, err = t.await(ctx)
	return out, true, err
}

// follow reads the remote agent's answer — the task's events as they
// come, or, from an agent that does not stream, one task or message —
// reporting them, and returns the call's result. subscribed: events are
// a subscription to the task, which fails when the task ended before it
// began (the task is then looked up); otherwise an error before the first
// event is the agent's refusal of the message.
func (t *remoteTask) follow(ctx context.Context, events iter.Seq2[spec.Event, error], subscribed bool) (string, error) {
	received := false
	for ev, err := range events {
		if err != nil {
			err = fmt.Errorf("a2a agent %s: %w", t.r.name, err)
			if ctx.Err() != nil || t.id == "" {
				return "", err // canceled, or no task began: nothing to report
			}
			if !received && !subscribed {
				return t.fail(err) // the message was refused
			}
			return t.broken(ctx, err)
		}
		received = true
		switch v := ev.(type) {
		case *spec.Message:
			// An answer without a task.
			t.start(spec.TaskID(v.ID), false)
			answer := partsText(v.Parts)
			t.d.Finish(answer)
			return answer, nil
		case *spec.Task:
			t.start(v.ID, false)
			t.absorb(v)
		case *spec.TaskStatusUpdateEvent:
			t.start(v.TaskID, false)
			t.status = v.Status
		case *spec.TaskArtifactUpdateEvent:
			t.start(v.TaskID, false)
			t.artifact(v)
			continue
		default:
			continue
		}
		if settled(t.status.State) {
			return t.outcome()
		}
		t.progress()
	}
	if t.id == "" {
		return "", fmt.Errorf("a2a agent %s answered nothing", t.r.name)
	}
	return t.broken(ctx, fmt.Errorf("a2a agent %s: the answer ended while its task %s was %s", t.r.name, t.id, stateName(t.status.State)))
}

// broken follows a task whose answer ended before the task settled (a
// connection cut, a non-blocking answer), unless the call was canceled.
func (t *remoteTask) broken(ctx context.Context, cause error) (string, error) {
	if ctx.Err() != nil {
		return "", cause
	}
	got, err := t.c.GetTask(ctx, &spec.GetTaskRequest{ID: t.id})
	if err != nil {
		if ctx.Err() != nil {
			return "", cause
		}
		return t.fail(fmt.Errorf("%w; looking the task up: %w", cause, err))
	}
	t.absorb(got)
	if settled(t.status.State) {
		return t.outcome()
	}
	return t.await(ctx)
}

// await waits for a task under way to settle: it subscribes to it when
// the agent streams (once: a second break fails the call), and looks it
// up every remotePollEvery when it does not.
func (t *remoteTask) await(ctx context.Context) (string, error) {
	if t.streaming {
		if t.resubscribed {
			return t.fail(fmt.Errorf("a2a agent %s: following its task %s broke twice", t.r.name, t.id))
		}
		t.resubscribed = true
		return t.follow(ctx, t.c.SubscribeToTask(ctx, &spec.SubscribeToTaskRequest{ID: t.id}), true)
	}
	tick := time.NewTicker(remotePollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("a2a agent %s: waiting for its task %s: %w", t.r.name, t.id, ctx.Err())
		case <-tick.C:
		}
		got, err := t.c.GetTask(ctx, &spec.GetTaskRequest{ID: t.id})
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("a2a agent %s: waiting for its task %s: %w", t.r.name, t.id, ctx.Err())
			}
			return t.fail(fmt.Errorf("a2a agent %s: looking up its task %s: %w", t.r.name, t.id, err))
		}
		t.absorb(got)
		if settled(t.status.State) {
			return t.outcome()
		}
		t.progress()
	}
}

// absorb takes the task as the agent has it: its status and artifacts.
func (t *remoteTask) absorb(task *spec.Task) {
	t.status = task.Status
	t.artifacts = t.artifacts[:0]
	for _, a := range task.Artifacts {
		if a != nil {
			t.artifacts = append(t.artifacts, remoteArtifact{id: a.ID, text: partsText(a.Parts)})
		}
	}
}

// artifact applies an artifact update; text it adds streams live. Text
// that replaces what streamed before (agentrt's final answer replaces its
// tokens) is not streamed again.
func (t *remoteTask) artifact(v *spec.TaskArtifactUpdateEvent) {
	if v.Artifact == nil {
		return
	}
	text := partsText(v.Artifact.Parts)
	i := slices.IndexFunc(t.artifacts, func(a remoteArtifact) bool { return a.id == v.Artifact.ID })
	switch {
	case i < 0:
		t.artifacts = append(t.artifacts, remoteArtifact{id: v.Artifact.ID, text: text})
	case v.Append:
		t.artifacts[i].text += text
	default:
		t.artifacts[i].text = text
		return
	}
	if text != "" {
		t.d.Text(text)
	}
}

// progress reports the task's state, with what its status message says.
func (t *remoteTask) progress() {
	t.d.Progress(stateName(t.status.State), messageText(t.status.Message))
}

// fail reports err as the delegation's failure and returns it.
func (t *remoteTask) fail(err error) (string, error) {
	t.d.Fail(agentrt.CodeSubagentFailed, err.Error())
	return "", err
}

// outcome is a settled task's end as the tool's result, reported.
func (t *remoteTask) outcome() (string, error) {
	status := ""
	if t.status.Message != nil {
		status = partsText(t.status.Message.Parts)
	}
	switch state := t.status.State; state {
	case spec.TaskStateCompleted:
		var b strings.Builder
		for _, a := range t.artifacts {
			b.WriteString(a.text)
		}
		answer := b.String()
		if answer == "" {
			answer = status
		}
		t.d.Finish(answer)
		return answer, nil
	case spec.TaskStateInputRequired, spec.TaskStateAuthRequired:
		t.d.Pause(stateName(state))
		return fmt.Sprintf("The remote agent %s asks: %s\nTo answer, call %s again with task_id %q and the answer as task.",
			t.r.name, status, t.r.name, t.id), nil
	default: // failed, rejected, canceled
		err := fmt.Errorf("the remote agent %s's task %s ended %s: %s", t.r.name, t.id, state, status)
		code := agentrt.CodeSubagentFailed
		if state == spec.TaskStateCanceled {
			code = agentrt.CodeCanceled
		}
		t.d.Fail(code, err.Error())
		return "", err
	}
}

// settled reports whether a task in state s has ended, or waits for its
// client: either way, the call's answer.
func settled(s spec.TaskState) bool { return s.Terminal() || waits(s) }

// waits reports whether a task in state s waits for its client.
func waits(s spec.TaskState) bool {
	return s == spec.TaskStateInputRequired || s == spec.TaskStateAuthRequired
}

// stateName is a task state as the delegation events name it: "working",
// "input_required".
func stateName(s spec.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATE_"))
}

func partsText(parts spec.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// messageText is a status message as words: its text parts, and its data
// parts as JSON (agentrt's agents name the tool calls they make so).
func messageText(m *spec.Message) string {
	if m == nil {
		return ""
	}
	var out []string
	for _, p := range m.Parts {
		if s := p.Text(); s != "" {
			out = append(out, s)
		} else if d := p.Data(); d != nil {
			if b, err := json.Marshal(d); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return strings.Join(out, "\n")
}

// messageID is the id of the message a call sends: the same for every
// attempt of the call (the call's idempotency key), so that the remote
// agent takes a retried call's message once, and different for calls
// that ask different things. The key alone is not enough: some models
// give their calls ids that repeat within a session ("call_1" in every
// reply), and the remote agent would take the second call's message for
// the first one sent again.
func messageID(key string, in RemoteInput) string {
	sum := sha256.Sum256([]byte(in.TaskID + "\x00" + in.Task))
	return strings.NewReplacer("/", ".").Replace(key) + "." + hex.EncodeToString(sum[:6])
}
