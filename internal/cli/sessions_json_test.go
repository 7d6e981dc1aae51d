package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/cli"
)

// sessions list, show and events speak JSON with --json, for scripts.
func TestSessionsJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	e.must(cli.ExitOK, "run", "--approve", "auto", "--session", "d1", "what is 1+1")
	_, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "w1", "what is 21*2+5"))

	{ // list
		type listed struct {
			ID, Agent, Status string
			LastSeq           int64  `json:"last_seq"`
			FirstInput        string `json:"first_input"`
		}
		var list []listed
		if err := json.Unmarshal([]byte(e.must(cli.ExitOK, "sessions", "list", "--json").out), &list); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(list, func(a, b listed) int { return strings.Compare(a.ID, b.ID) })
		if len(list) != 2 || list[0].ID != "d1" || list[0].Status != "done" || list[0].FirstInput != "what is 1+1" || list[0].LastSeq == 0 ||
			list[1].ID != "w1" || list[1].Status != "waiting" || list[1].Agent != "assistant" {
			t.Errorf("sessions list --json: %+v", list)
		}
	}

	{ // show
		var show struct {
			Session map[string]any
			Pending []struct{ ID, Kind, Question string }
			Next    []struct {
				Kind, Command string
				RequestID     string `json:"request_id"`
			}
		}
		if err := json.Unmarshal([]byte(e.must(cli.ExitOK, "sessions", "show", "--json", "w1").out), &show); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range show.Session {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		// Every field of the session, as the text shows it.
		if diff := cmp.Diff([]string{"agent", "created_at", "id", "last_seq", "status", "tenant", "turn", "updated_at", "usage"}, keys); diff != "" {
			t.Errorf("session keys (-want +got):\n%s", diff)
		}
		if len(show.Pending) != 1 || show.Pending[0].ID != req || show.Pending[0].Kind != "approval" {
			t.Errorf("pending: %+v", show.Pending)
		}
		want := "agentrt --config " + e.config + " approve w1 " + req
		if len(show.Next) != 1 || show.Next[0].Kind != "resolve" || show.Next[0].RequestID != req || show.Next[0].Command != want {
			t.Errorf("next: %+v, want the command %s", show.Next, want)
		}
	}

	{ // events
		plain := e.must(cli.ExitOK, "sessions", "events", "d1").out
		if got := e.must(cli.ExitOK, "sessions", "events", "--json", "d1").out; got != plain {
			t.Errorf("events --json differs from events:\n%s\n%s", got, plain)
		}
		checkSeq(t, parseEvents(t, plain), 1)
	}
}
