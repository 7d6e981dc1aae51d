package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// RetrieveTool is the name of the tool an agent with Memory gets.
const RetrieveTool = "retrieve"

type retrieveIn struct {
	Query string `json:"query" jsonschema:"what to look for: words that the remembered text would contain"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many memories at most, 1 to 20 (default 5)"`
}

type retrieved struct {
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Score    float64           `json:"score"`
}

// retrieveTool is an agent's memory as a tool: a full-text search of
// what agent remembers, its own and its session's.
func retrieveTool(agent string, m memory.Store) tool.Tool {
	return tool.Must(tool.New(RetrieveTool,
		"Searches what you remember from earlier conversations and notes: facts, preferences, decisions. "+
			"Use it before asking the user something they may have told you already.",
		func(ctx context.Context, in retrieveIn) (map[string][]retrieved, error) {
			if strings.TrimSpace(in.Query) == "" {
				return nil, errors.New("the query is empty: say what to look for")
			}
			if in.Limit < 0 || in.Limit > 20 {
				return nil, fmt.Errorf("limit %d: want 1 to 20", in.Limit)
			}
			info, _ := tool.CallInfoFrom(ctx)
			hits, err := m.Search(ctx, memory.Query{Text: in.Query, Limit: in.Limit,
				Scope: memory.Scope{Agent: agent, Session: info.SessionID}})
			if err != nil {
				return nil, err
			}
			out := make([]retrieved, 0, len(hits))
			for _, h := range hits {
				out = append(out, retrieved{Text: h.Text, Metadata: h.Metadata, Score: h.Score})
			}
			return map[string][]retrieved{"memories": out}, nil
		}))
}

// withRetrieve gives a with Memory its retrieve tool, in a registry of
// its own (a registry may be shared by agents, and the tool is this
// agent's).
func (a *Agent) withRetrieve() error {
	if a.Memory == nil {
		return nil
	}
	if a.Tools != nil && a.Tools.Len() > 0 {
		if _, ok := a.Tools.Get(RetrieveTool); ok {
			return nil // the caller's own
		}
		own, err := a.Tools.Filter([]string{"*"})
		if err != nil {
			return err
		}
		if err := own.Add(retrieveTool(a.Name, a.Memory)); err != nil {
			return err
		}
		a.Tools = own
		return nil
	}
	reg, err := tool.NewRegistry(retrieveTool(a.Name, a.Memory))
	if err != nil {
		return err
	}
	a.Tools = reg
	return nil
}

// rememberTurn writes the turn's question and answer to the agent's
// memory, when it asks for that (Agent.RememberTurns). A failure is an
// error event the run goes on after: the answer matters more.
func (x *Exec) rememberTurn(ctx context.Context, answer string) {
	a := x.agent
	if a.Memory == nil || !a.RememberTurns || strings.TrimSpace(answer) == "" || x.st.Input == "" {
		return
	}
	_, err := a.Memory.Add(ctx, memory.Item{
		Text:     "Q: " + x.st.Input + "\nA: " + answer,
		Scope:    memory.Scope{Agent: a.Name},
		Metadata: map[string]string{"session": x.st.SessionID, "run": x.st.RunID},
	})
	if err != nil {
		emit(x, session.Error{Code: CodeMemoryWrite, Message: "the turn was not remembered: " + err.Error(), Recoverable: true})
	}
}
