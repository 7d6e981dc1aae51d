package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// The benchmarks compare Registry.Call with the loop a programmer would
// write by hand for one known tool: decode into the input struct, call,
// encode the output. Run them with:
//
//	go test -run '^$' -bench . -benchmem ./tool

type forecastIn struct {
	City  string `json:"city" jsonschema:"city name"`
	Days  int    `json:"days" jsonschema:"number of days, 1 to 7"`
	Units string `json:"units,omitempty" jsonschema:"metric or imperial"`
}

type forecastOut struct {
	City     string  `json:"city"`
	Days     int     `json:"days"`
	Summary  string  `json:"summary"`
	HighTemp float64 `json:"high_temp"`
}

func forecast(_ context.Context, in forecastIn) (forecastOut, error) {
	return forecastOut{City: in.City, Days: in.Days, Summary: "sunny", HighTemp: 21.5}, nil
}

var benchArgs = []json.RawMessage{
	json.RawMessage(`{"city":"Paris","days":3}`),
	json.RawMessage(`{"city":"Lyon","days":1,"units":"metric"}`),
	json.RawMessage(`{"city":"Nice","days":7}`),
}

// handWritten is the baseline: what a turn's three calls cost without the
// Registry.
func handWritten(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	var in forecastIn
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	out, err := forecast(ctx, in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// BenchmarkRegistryCall measures one agent turn's worth of tool work:
// three calls. What Registry.Call adds to the hand-written loop, for a tool
// that does no work of its own: the schema check (in place, no
// allocation), the call's context (lazy: no timer unless the tool asks for
// Done) and two clock reads for Latency; and for an isolated tool, the
// goroutine hand-off (a park and a wake-up, which in a real turn, with idle
// threads to wake, costs several microseconds more than here).
func BenchmarkRegistryCall(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, a := range benchArgs {
				if _, err := handWritten(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, isolate := range []bool{false, true} {
		name := "registry"
		if isolate {
			name = "registry-isolated"
		}
		b.Run(name, func(b *testing.B) {
			r := mustRegistry(b, tool.Must(tool.New("forecast", "Weather forecast.", forecast, tool.Meta{Isolate: isolate})))
			b.ReportAllocs()
			for b.Loop() {
				for _, a := range benchArgs {
					if res := r.Call(ctx, "forecast", a); !res.OK {
						b.Fatal(res.Error)
					}
				}
			}
		})
	}
}

// BenchmarkTypedCall is one call of a typed tool without the Registry:
// schema check, decoding, the function, encoding; no goroutine, no
// timeout. Compare with one third of BenchmarkRegistryCall/baseline.
func BenchmarkTypedCall(b *testing.B) {
	ctx := context.Background()
	t := tool.Must(tool.New("forecast", "Weather forecast.", forecast))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.Call(ctx, benchArgs[1]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate compares the in-place schema check with decoding the
// arguments into an any and validating that with jsonschema-go, which is
// what a Validator does for schemas beyond the keywords it handles itself.
func BenchmarkValidate(b *testing.B) {
	schema, err := jsonschema.For[forecastIn](nil)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		b.Fatal(err)
	}
	args := benchArgs[1]
	b.Run("in-place", func(b *testing.B) {
		v, err := tool.NewValidator(tool.Definition{Name: "forecast", InputSchema: raw})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := v.Validate(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema-go", func(b *testing.B) {
		rs, err := schema.Resolve(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			var x any
			if err := json.Unmarshal(args, &x); err != nil {
				b.Fatal(err)
			}
			if err := rs.Validate(x); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func mustRegistry(tb testing.TB, tools ...tool.Tool) *tool.Registry {
	tb.Helper()
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
