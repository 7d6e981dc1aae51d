package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
)

// Two agentrt serve processes on one Postgres, as two replicas behind a
// load balancer: what a client does on either acts on a session wherever
// it runs. Input sent to one and followed on the other; a request for a
// person answered on the replica that is not running the session, which
// continues the run exactly once; cancel on the replica that is not
// running it; the replica running a session killed with SIGKILL, and the
// other finishing its run.
func TestServeProcessReplicas(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	dsn, _ := pgtest.Schema(t)
	llm := fakellm.Start(t)
	e := newEnvStore(t, dsn, fmt.Sprintf(`lease_ttl: 3s
server: {sweep_every: 200ms}
gateway: {poll: 50ms}
models:
  m: {provider: openai, model: fake, base_url: %q}
agents:
  assistant: {model: m, tools: [calculator]}
  careful: {model: m, tools: [calculator], approval: {ask: [calculator]}}
`, llm.URL+"/v1"), nil)
	reps := []*serveProc{startServe(t, e, nil), startServe(t, e, nil)}
	apis := []*apiClient{newAPI(t, reps[0].url, ""), newAPI(t, reps[1].url, "")}
	// runningOn is the replica whose process holds session id's lease.
	runningOn := func(id string) int {
		t.Helper()
		sh := showSession(t, e, id).Session
		if sh.Lease == nil {
			t.Fatalf("session %s has no lease: nobody runs it", id)
		}
		f := strings.Split(sh.Lease.Owner, ":")
		for i, r := range reps {
			if len(f) == 3 && f[1] == strconv.Itoa(r.cmd.Process.Pid) {
				return i
			}
		}
		t.Fatalf("session %s is leased by %s, neither replica", id, sh.Lease.Owner)
		return -1
	}
	create := func(api *apiClient, id, agent string) {
		t.Helper()
		api.must(http.StatusCreated, "POST", "/v1/sessions", map[string]string{"id": id, "agent": agent}, nil)
	}

	t.Run("input on one, followed on the other", func(t *testing.T) {
		create(apis[0], "s1", "assistant")
		follow := startCurl(t, reps[1].url+"/v1/sessions/s1/events", 0)
		here := startCurl(t, reps[0].url+"/v1/sessions/s1/events", 0)
		apis[0].send("s1", "what is 6*7")
		evs := follow.until("the turn's end", typeIs("run_finished"))
		here.until("the turn's end", typeIs("run_finished"))
		checkIDs(t, "the other replica's stream", evs, 1, lastID(t, evs))
		if st := runStatus(t, evs[len(evs)-1]); st != "done" {
			t.Fatalf("the turn ended %s", st)
		}
		if !strings.Contains(eventsOf(evs, "final")[0].Data, "42") {
			t.Errorf("the answer: %s", eventsOf(evs, "final")[0].Data)
		}

		// A second turn followed on both replicas, which have both watched
		// the session since the first turn: each stream has the turn's
		// live tokens — those of the replica running it, and those the
		// other gets relayed through Postgres.
		follows := []*curlStream{here, follow}
		apis[1].send("s1", "what is 5*5")
		for i, f := range follows {
			evs := f.until("the second turn's end", typeIs("run_finished"))
			var text strings.Builder
			for _, ev := range eventsOf(evs, "token") {
				var d struct {
					Data struct{ Text string } `json:"data"`
				}
				_ = json.Unmarshal([]byte(ev.Data), &d)
				text.WriteString(d.Data.Text)
			}
			var fin struct {
				Data struct{ Text string } `json:"data"`
			}
			_ = json.Unmarshal([]byte(eventsOf(evs, "final")[0].Data), &fin)
			if text.Len() == 0 || !strings.HasSuffix(fin.Data.Text, text.String()) {
				t.Errorf("replica %d's stream: tokens %q, answer %q; want the answer's tokens", i, text.String(), fin.Data.Text)
			}
		}
	})

	t.Run("approval on the other replica", func(t *testing.T) {
		create(apis[0], "s2", "careful")
		follow := startCurl(t, reps[0].url+"/v1/sessions/s2/events", 0)
		apis[0].send("s2", "what is 2+3")
		asked := follow.until("the request", typeIs("input_required"))
		var d struct {
			Data struct {
				RequestID string `json:"request_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(asked[len(asked)-1].Data), &d); err != nil || d.Data.RequestID == "" {
			t.Fatalf("input_required: %s", asked[len(asked)-1].Data)
		}
		follow.until("the run's stop", typeIs("run_finished")) // waiting
		// The person's inbox on the other replica lists it.
		var inbox struct {
			Requests []struct {
				SessionID string `json:"session_id"`
				Request   struct {
					RequestID string `json:"request_id"`
				} `json:"request"`
			} `json:"requests"`
		}
		apis[1].must(http.StatusOK, "GET", "/v1/requests?status=pending", nil, &inbox)
		if len(inbox.Requests) != 1 || inbox.Requests[0].SessionID != "s2" || inbox.Requests[0].Request.RequestID != d.Data.RequestID {
			t.Fatalf("the other replica's inbox: %+v", inbox)
		}
		var res struct {
			Pending int    `json:"pending"`
			RunID   string `json:"run_id"`
		}
		apis[1].must(http.StatusOK, "POST", "/v1/sessions/s2/requests/"+d.Data.RequestID, map[string]string{"decision": "approve"}, &res)
		if res.Pending != 0 || res.RunID == "" {
			t.Fatalf("the answer: %+v", res)
		}
		evs := follow.until("the continued run's end", typeIs("run_finished"))
		if st := runStatus(t, evs[len(evs)-1]); st != "done" {
			t.Fatalf("the continued run ended %s", st)
		}
		if n := len(eventsOf(evs, "tool_result")); n != 1 {
			t.Errorf("the approved call ran %d times", n)
		}
		code, body, _ := apis[0].do("POST", "/v1/sessions/s2/requests/"+d.Data.RequestID, map[string]string{"decision": "reject"})
		if code != http.StatusConflict || !strings.Contains(string(body), "already_resolved") {
			t.Errorf("the same request on the first replica: %d %s", code, body)
		}
	})

	t.Run("cancel on the replica not running it", func(t *testing.T) {
		arrived, release := llm.Hold()
		defer release()
		create(apis[0], "s3", "assistant")
		apis[0].send("s3", "what is 1+1")
		<-arrived
		other := 1 - runningOn("s3")
		var out struct {
			Acted  bool   `json:"acted"`
			Status string `json:"status"`
		}
		apis[other].must(http.StatusOK, "POST", "/v1/sessions/s3/cancel", map[string]string{"reason": "from the other replica"}, &out)
		if !out.Acted || out.Status != "canceled" {
			t.Fatalf("cancel: %+v", out)
		}
		if st := showSession(t, e, "s3").Session.Status; st != "canceled" {
			t.Fatalf("after cancel: %s", st)
		}
	})

	t.Run("the replica running a session killed", func(t *testing.T) {
		arrived, release := llm.Hold()
		defer release()
		create(apis[0], "s4", "assistant")
		apis[0].send("s4", "what is 3*3")
		<-arrived
		owner := runningOn("s4")
		kill(reps[owner].child)
		survivor := reps[1-owner]
		evs := startCurl(t, survivor.url+"/v1/sessions/s4/events", 0).until("the resumed run's end", typeIs("run_finished"))
		if st := runStatus(t, evs[len(evs)-1]); st != "done" {
			t.Fatalf("the run ended %s on the surviving replica: %v", st, evs)
		}
		if len(eventsOf(evs, "run_resumed")) != 1 {
			t.Errorf("want one run_resumed (recovered): %v", evs)
		}
		survivor.stopOK()
	})
}
