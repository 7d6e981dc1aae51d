package jsonfast_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/internal/jsonfast"
)

type Args struct {
	Query string   `json:"query"`
	Limit int      `json:"limit"`
	Tags  []string `json:"tags"`
}

type Result struct {
	Hits []string `json:"hits"`
	More bool     `json:"more,omitempty"`
}

// Compile the plans once, where the types are known.
var (
	argsDecoder   = jsonfast.NewDecoder[Args]()
	resultEncoder = jsonfast.NewEncoder[Result]()
)

func decodeArgs(data []byte) (Args, error) {
	var a Args
	if argsDecoder.Decode(data, &a) {
		return a, nil
	}
	a = Args{} // Decode may have written part of it
	err := json.Unmarshal(data, &a)
	return a, err
}

func encodeResult(r Result) ([]byte, error) {
	if b, ok := resultEncoder.Append(nil, &r); ok {
		return b, nil
	}
	return json.Marshal(r)
}

func Example() {
	// The fast path takes this one.
	a, err := decodeArgs([]byte(`{"query":"go","limit":2,"tags":["lang"]}`))
	fmt.Println(a, err)

	// "Query" matches the field only case-insensitively, and "extra" no
	// field: the fast path declines, and encoding/json decides.
	a, err = decodeArgs([]byte(`{"Query":"go","extra":true}`))
	fmt.Println(a, err)

	b, err := encodeResult(Result{Hits: []string{"<go.dev>"}})
	fmt.Println(string(b), err)
	// Output:
	// {go 2 [lang]} <nil>
	// {go 0 []} <nil>
	// {"hits":["\u003cgo.dev\u003e"]} <nil>
}
