package a2a_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// rpcError is a JSON-RPC error as the wire carries it.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	} `json:"data"`
}

// rpcCall posts body to agent assistant and returns the JSON-RPC error
// it was answered with (nil: none), reading a stream's first event.
func (f *fixture) rpcCall(t *testing.T, body string) *rpcError {
	t.Helper()
	resp, err := http.Post(f.http.URL+"/v1/a2a/assistant", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				raw = []byte(d)
				break
			}
		}
	} else {
		raw, _ = io.ReadAll(resp.Body)
	}
	var out struct {
		Error *rpcError `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: the answer %q: %v", body, raw, err)
	}
	return out.Error
}

// leaks are what no error message says: a2a-go's steps, Go's names, the
// store's words.
var leaks = []string{"failed to", "setup failed", "exec ctx", "loading failed", "cancelation failed", "Go struct",
	"a2a.", "storetest", "sqlite", "json:", "%!"}

// checkPublic fails t if e's message says what a client should not read.
func checkPublic(t *testing.T, what string, e *rpcError) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(e.Message, l) {
			t.Errorf("%s: the message %q says %q", what, e.Message, l)
		}
	}
}

// Every error of the A2A endpoint is a sentence of the adapter's own
// with A2A's code: a2a-go's refusals without the chain of its steps, bad
// params without Go's type names, the store's failures without what the
// store said.
func TestErrorMessages(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("hello")})
	if err != nil {
		t.Fatal(err)
	}
	done := res.(*spec.Task)
	id := string(done.ID)
	msg := func(m string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + m + `}}`
	}
	tests := []struct {
		name, body string
		code       int
		says       string
	}{
		{"unknown task", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`, -32001, "task nope not found"},
		{"message on an unknown task", msg(`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"x"}],"taskId":"task_nope"}`), -32001, "task task_nope not found"},
		{"params of the wrong type", msg(`"x"`), -32602, "params.message: want an object, got string"},
		{"a field of the wrong type", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":"zz"}}`, -32602, "params.pageSize: want an integer, got string"},
		{"stream with params of the wrong type", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":"x"}}`, -32602, "params.message: want an object, got string"},
		{"message on an ended task", msg(`{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"x"}],"taskId":"` + id + `"}`), -32602, "has ended (TASK_STATE_COMPLETED): send a message without a task id"},
		{"stream on an ended task", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"x"}],"taskId":"` + id + `"}}}`, -32602, "has ended"},
		{"another context", msg(`{"messageId":"m4","role":"ROLE_USER","parts":[{"text":"x"}],"taskId":"` + id + `","contextId":"other"}`), -32602, "is of context " + done.ContextID + ", not other"},
		{"message without parts on a task", msg(`{"messageId":"m5","role":"ROLE_USER","parts":[],"taskId":"` + id + `"}`), -32602, "the message has no parts"},
		{"cancel of an ended task", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"` + id + `"}}`, -32002, "has ended (TASK_STATE_COMPLETED): only a task in progress can be canceled"},
		{"a file part", msg(`{"messageId":"m6","role":"ROLE_USER","parts":[{"url":"https://example.com/x.pdf","mediaType":"application/pdf"}]}`), -32602, "part 0: the URL is not fetched: this server fetches no URLs"},
		{"a file part of no media type", msg(`{"messageId":"m7","role":"ROLE_USER","parts":[{"raw":"eA==","mediaType":"not a type;;"}]}`), -32005, `part 0: mediaType "not a type;;" is not a media type`},
		{"a bad page token", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"zz"}}`, -32602, `pageToken "zz" is not a token a listing gave`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := f.rpcCall(t, tt.body)
			if e == nil {
				t.Fatalf("%s: no error", tt.body)
			}
			if e.Code != tt.code || !strings.Contains(e.Message, tt.says) {
				t.Errorf("%d %q; want %d saying %q", e.Code, e.Message, tt.code, tt.says)
			}
			checkPublic(t, tt.name, e)
		})
	}
}

// A failing store is an internal error whose message says what could
// not be read, not what the store said, and names the runtime's code.
func TestErrorOfAFailingStore(t *testing.T) {
	var faults storetest.Faults
	f := newFixture(t, options{store: storetest.Faulty(memstore.New(), &faults)})
	res, err := f.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("hello")})
	if err != nil {
		t.Fatal(err)
	}
	faults.FailRead(1, true)
	e := f.rpcCall(t, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+string(res.(*spec.Task).ID)+`"}}`)
	faults.FailRead(0, false)
	if e == nil {
		t.Fatal("GetTask with the store failing: no error")
	}
	if e.Code != -32603 || !strings.Contains(e.Message, "the store could not be read") || len(e.Data) == 0 || e.Data[0].Metadata["agentrt.code"] != "store" {
		t.Errorf("GetTask with the store failing: %+v; want an internal error saying the store could not be read, code store", e)
	}
	checkPublic(t, "a failing store", e)
}
