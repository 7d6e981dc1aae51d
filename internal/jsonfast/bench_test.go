package jsonfast

import (
	"encoding/json"
	"testing"
)

// Run with: go test -run '^$' -bench . -count 5 -benchtime 200000x ./internal/jsonfast/

func BenchmarkDecode(b *testing.B) {
	b.Run("Add", func(b *testing.B) { benchDecode[Add](b, `{"A":1,"B":2}`) })
	b.Run("Search", func(b *testing.B) {
		benchDecode[Search](b, `{"query":"weather in Paris","limit":10,"tags":["news","fr"]}`)
	})
}

func benchDecode[T any](b *testing.B, in string) {
	data := []byte(in)
	d := NewDecoder[T]()
	b.Run("jsonfast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v T
			if !d.Decode(data, &v) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v T
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	b.Run("Sum", func(b *testing.B) { benchEncode(b, Sum{3}) })
	b.Run("Search", func(b *testing.B) {
		benchEncode(b, Search{Query: "weather in Paris", Limit: 10, Tags: []string{"news", "fr"}})
	})
}

func benchEncode[T any](b *testing.B, v T) {
	e := NewEncoder[T]()
	// Into a new slice each time, as json.Marshal returns one.
	b.Run("jsonfast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := e.Append(nil, &v); !ok {
				b.Fatal("declined")
			}
		}
	})
	// Into a reused buffer.
	b.Run("jsonfast-reuse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = e.Append(buf[:0], &v); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
