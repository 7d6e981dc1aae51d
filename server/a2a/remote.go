package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentrt/agentrt/tool"
)

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
// its task id, for the next call to answer; a failed or canceled task is
// the call's error. The card is fetched on the first call.
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
	return tool.New(name, description, r.call)
}

type remote struct {
	name, url string
	hc        *http.Client

	mu     sync.Mutex
	client *a2aclient.Client // guarded by mu; made on the first call
}

func (r *remote) connect(ctx context.Context) (*a2aclient.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, nil
	}
	card, err := agentcard.NewResolver(r.hc).Resolve(ctx, r.url)
	if err != nil {
		return nil, fmt.Errorf("a2a agent %s: its card at %s: %w", r.name, r.url, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(r.hc))
	if err != nil {
		return nil, fmt.Errorf("a2a agent %s: %w", r.name, err)
	}
	r.client = c
	return c, nil
}

func (r *remote) call(ctx context.Context, in RemoteInput) (string, error) {
	if strings.TrimSpace(in.Task) == "" {
		return "", errors.New("task: say what to ask the remote agent")
	}
	c, err := r.connect(ctx)
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
			msg.ID = strings.NewReplacer("/", ".").Replace(info.IdempotencyKey)
		}
	}
	res, err := c.SendMessage(ctx, &spec.SendMessageRequest{Message: msg})
	if err != nil {
		return "", fmt.Errorf("a2a agent %s: %w", r.name, err)
	}
	switch v := res.(type) {
	case *spec.Message:
		return partsText(v.Parts), nil
	case *spec.Task:
		return r.outcome(v)
	default:
		return "", fmt.Errorf("a2a agent %s answered a %T", r.name, res)
	}
}

// outcome is a task's end as the tool's result.
func (r *remote) outcome(t *spec.Task) (string, error) {
	status := ""
	if t.Status.Message != nil {
		status = partsText(t.Status.Message.Parts)
	}
	switch t.Status.State {
	case spec.TaskStateCompleted:
		var b strings.Builder
		for _, a := range t.Artifacts {
			b.WriteString(partsText(a.Parts))
		}
		if b.Len() == 0 {
			return status, nil
		}
		return b.String(), nil
	case spec.TaskStateInputRequired, spec.TaskStateAuthRequired:
		return fmt.Sprintf("The remote agent %s asks: %s\nTo answer, call %s again with task_id %q and the answer as task.",
			r.name, status, r.name, t.ID), nil
	case spec.TaskStateFailed, spec.TaskStateRejected, spec.TaskStateCanceled:
		return "", fmt.Errorf("the remote agent %s's task %s ended %s: %s", r.name, t.ID, t.Status.State, status)
	default:
		return "", fmt.Errorf("the remote agent %s's task %s is %s", r.name, t.ID, t.Status.State)
	}
}

func partsText(parts spec.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}
