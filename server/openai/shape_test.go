package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	oa "github.com/openai/openai-go/v3"

	"github.com/agentrt/agentrt/server"
)

// Every error on the OpenAI routes is in OpenAI's shape,
// {"error":{"message","type","param","code"}}, the server's own refusals
// too (no key, a wrong key, a rate, a method the route does not take, no
// route under its path, a query that does not parse, shutting down), so
// that OpenAI's clients read them; the other routes keep the server's
// shape.
func TestServerErrorsInOpenAIShape(t *testing.T) {
	f := newFixture(t, server.Key{Key: "k", Tenant: "t"}, server.Key{Key: "slow", Tenant: "t", Rate: 0.001, Burst: 1})
	type want struct {
		status int
		code   string
		typ    string
	}
	for _, tc := range []struct {
		method, path, key string
		want              want
	}{
		{"GET", "/v1/models", "", want{401, "unauthorized", "authentication_error"}},
		{"POST", "/v1/chat/completions", "wrong", want{401, "unauthorized", "authentication_error"}},
		{"POST", "/v1/models", "k", want{405, "method_not_allowed", "invalid_request_error"}},
		{"DELETE", "/v1/models/assistant", "k", want{405, "method_not_allowed", "invalid_request_error"}},
		{"GET", "/v1/chat/completions", "k", want{405, "method_not_allowed", "invalid_request_error"}},
		{"PUT", "/v1/responses", "k", want{405, "method_not_allowed", "invalid_request_error"}},
		{"PATCH", "/v1/responses/resp_x", "k", want{405, "method_not_allowed", "invalid_request_error"}},
		{"GET", "/v1/models/a/b", "k", want{404, "no_route", "not_found_error"}},
		{"GET", "/v1/responses/x/y/z", "k", want{404, "no_route", "not_found_error"}},
		{"GET", "/v1/models?a=%zz", "k", want{400, "malformed_request", "invalid_request_error"}},
		{"GET", "/v1/models", "slow", want{200, "", ""}},
		{"GET", "/v1/models", "slow", want{429, "too_many_requests", "rate_limit_error"}},
	} {
		status, body, hdr := request(t, f, tc.method, tc.path, tc.key)
		if tc.want.status == 200 {
			if status != 200 {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, status, body)
			}
			continue
		}
		checkShape(t, tc.method+" "+tc.path, status, body, tc.want.status, tc.want.code, tc.want.typ)
		if tc.want.status == 405 && hdr.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
	// Not an OpenAI route: the server's own shape.
	status, body, _ := request(t, f, "GET", "/v1/sessions", "")
	var eb map[string]map[string]any
	if status != 401 || json.Unmarshal(body, &eb) != nil || eb["error"]["code"] != "unauthorized" || eb["error"]["type"] != nil {
		t.Errorf("GET /v1/sessions without a key: %d %s; want the server's shape", status, body)
	}
	// openai-go reads the refusal of a wrong key as its *Error.
	_, err := f.client("wrong").Models.List(t.Context())
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "unauthorized" || apiErr.Type != "authentication_error" {
		t.Errorf("openai-go with a wrong key: %v; want its *Error, 401 unauthorized authentication_error", err)
	}
	// Shutting down.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	status, body, _ = request(t, f, "POST", "/v1/chat/completions", "k")
	checkShape(t, "POST /v1/chat/completions while shutting down", status, body, 503, "shutting_down", "server_error")
}

func request(t *testing.T, f *fixture, method, path, key string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// checkShape checks that body is OpenAI's error shape, with exactly its
// four fields, the status, code and type wanted, and a message.
func checkShape(t *testing.T, what string, status int, body []byte, wantStatus int, code, typ string) {
	t.Helper()
	var got struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(body, &got); err != nil || status != wantStatus {
		t.Errorf("%s: %d %s; want %d in OpenAI's error shape", what, status, body, wantStatus)
		return
	}
	e := got.Error
	_, hasParam := e["param"]
	msg, _ := e["message"].(string)
	if len(e) != 4 || !hasParam || e["code"] != code || e["type"] != typ || msg == "" {
		t.Errorf("%s: %s; want {message, type %s, param, code %s}", what, body, typ, code)
	}
}

// Each model's created is a real time: when the server started (the
// adapter's clock at Mount), as openai-go reads it.
func TestModelsCreated(t *testing.T) {
	f := newFixture(t)
	page, err := f.client("").Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Data {
		if m.Created != 1700000000 {
			t.Errorf("model %s: created %d; want the server's start, 1700000000", m.ID, m.Created)
		}
	}
	m, err := f.client("").Models.Get(t.Context(), "writer")
	if err != nil || m.Created != 1700000000 {
		t.Errorf("get writer: %+v %v; want created 1700000000", m, err)
	}
}
