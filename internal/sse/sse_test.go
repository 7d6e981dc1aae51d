package sse_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/sse"
)

type ev struct{ Event, Data string }

// readAll reads events until an error, and returns them and the error
// (nil for a clean io.EOF).
func readAll(rd *sse.Reader) ([]ev, error) {
	var evs []ev
	for {
		e, d, err := rd.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev{string(e), string(d)})
	}
}

// readers serves s whole, a byte at a time, and in 7-byte pieces, so that
// lines cross reads.
func readers(s string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(s) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"pieces":   func() io.Reader { return &pieces{s: s, n: 7} },
	}
}

// pieces reads s n bytes at a time.
type pieces struct {
	s string
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.n)], p.s)
	p.s = p.s[n:]
	return n, nil
}

func TestReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10000) // longer than the 4 KiB buffer
	tests := []struct {
		name string
		in   string
		want []ev
	}{
		{"empty stream", "", nil},
		{"one event", "data: a\n\n", []ev{{"", "a"}}},
		{"two events", "data: a\n\ndata: b\n\n", []ev{{"", "a"}, {"", "b"}}},
		{"data over lines, joined by LF", "data: a\ndata: b\ndata: c\n\n", []ev{{"", "a\nb\nc"}}},
		{"no space after the colon", "data:a\nevent:x\n\n", []ev{{"x", "a"}}},
		{"only one space is removed", "data:  a \n\n", []ev{{"", " a "}}},
		{"colons in the value", "data: {\"a\":\"b:c\"}\n\n", []ev{{"", `{"a":"b:c"}`}}},
		{"a data field without a colon is empty data", "data\n\n", []ev{{"", ""}}},
		{"empty data lines", "data:\ndata:\n\n", []ev{{"", "\n"}}},
		{"event names", "event: delta\ndata: a\n\nevent: stop\ndata: b\n\n", []ev{{"delta", "a"}, {"stop", "b"}}},
		{"the last event field wins", "event: a\nevent: b\ndata: x\n\n", []ev{{"b", "x"}}},
		{"an event name does not outlive its event", "event: x\ndata: a\n\ndata: b\n\n", []ev{{"x", "a"}, {"", "b"}}},
		{"an event without data is skipped, name and all", "event: x\n\ndata: b\n\n", []ev{{"", "b"}}},
		{"comments", ": keep-alive\n\n:\ndata: a\n: in the middle\ndata: b\n\n", []ev{{"", "a\nb"}}},
		{"unknown fields", "id: 7\nretry: 1000\nfoo: bar\nfoo\ndata: a\n\n", []ev{{"", "a"}}},
		{"a space before the colon makes another field", "data : a\ndata: b\n\n", []ev{{"", "b"}}},
		{"field names are case-sensitive", "Data: a\ndata: b\n\n", []ev{{"", "b"}}},
		{"several blank lines", "\n\n\ndata: a\n\n\n\ndata: b\n\n", []ev{{"", "a"}, {"", "b"}}},
		{"CRLF", "data: a\r\ndata: b\r\n\r\nevent: e\r\ndata: c\r\n\r\n", []ev{{"", "a\nb"}, {"e", "c"}}},
		{"LF and CRLF mixed", "data: a\r\n\ndata: b\n\r\n", []ev{{"", "a"}, {"", "b"}}},
		// The format also ends lines at a lone CR; no provider sends one,
		// and this reader does not: a lone CR is part of the line.
		{"a lone CR is not a line end", "data: a\rdata: b\n\n", []ev{{"", "a\rdata: b"}}},
		{"only one CR before LF is removed", "data: a\r\r\n\n", []ev{{"", "a\r"}}},
		// The format strips a leading byte-order mark; this reader does
		// not, so the first line's field name is not "data".
		{"a byte-order mark is not stripped", "\ufeffdata: a\n\ndata: b\n\n", []ev{{"", "b"}}},
		{"the last event without a blank line", "data: a\n\ndata: b\n", []ev{{"", "a"}, {"", "b"}}},
		{"the last event without a newline", "data: a\n\ndata: b", []ev{{"", "a"}, {"", "b"}}},
		{"the last line without a newline, after CR", "event: e\ndata: b\r", []ev{{"e", "b"}}},
		{"a trailing event field without data", "data: a\n\nevent: x", []ev{{"", "a"}}},
		{"a trailing comment", "data: a\n\n: bye", []ev{{"", "a"}}},
		{"a long line", "data: " + long + "\n\n", []ev{{"", long}}},
		{"long lines among short ones", "data: a\ndata: " + long + "\ndata: b\n\ndata: " + long + long + "\r\n\r\nevent: e\ndata: c\n\n",
			[]ev{{"", "a\n" + long + "\nb"}, {"", long + long}, {"e", "c"}}},
		{"a long last line without a newline", "data: " + long, []ev{{"", long}}},
		{"a long comment", ":" + long + "\ndata: a\n\n", []ev{{"", "a"}}},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.in) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				got, err := readAll(sse.NewReader(r(), 0))
				if err != nil {
					t.Fatalf("error %v after %q", err, got)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestReaderEOFRepeats(t *testing.T) {
	t.Parallel()
	rd := sse.NewReader(strings.NewReader("data: a"), 0)
	if _, d, err := rd.Next(); err != nil || string(d) != "a" {
		t.Fatalf("Next = %q, %v; want a", d, err)
	}
	for range 3 {
		if e, d, err := rd.Next(); err != io.EOF || e != nil || d != nil {
			t.Fatalf("Next after the end = %q, %q, %v; want io.EOF", e, d, err)
		}
	}
}

func TestReaderError(t *testing.T) {
	t.Parallel()
	// A read error ends the stream, even mid-event: half an event is
	// not an event.
	boom := errors.New("boom")
	rd := sse.NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), 0)
	got, err := readAll(rd)
	if !errors.Is(err, boom) || !cmp.Equal(got, []ev{{"", "a"}}) {
		t.Errorf("got %q, %v; want [a] then boom", got, err)
	}
}

func TestReaderLineTooLong(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int
		in      string
		want    []ev // the events before the long line
		tooLong bool
	}{
		{"short limit, short line", 10, "data: 1234\n\n", []ev{{"", "1234"}}, false},
		{"exactly the limit", 10, "data: 1234\n\ndata: 12345\n\n", []ev{{"", "1234"}}, true},
		{"exactly the limit, last line", 10, "data: 1234", []ev{{"", "1234"}}, false},
		{"over the limit, last line", 10, "data: 12345", nil, true},
		{"a comment over the limit", 10, ": 123456789\n", nil, true},
		{"over the limit, within the buffer", 100, "data: a\n\ndata: " + strings.Repeat("x", 200) + "\n\n", []ev{{"", "a"}}, true},
		{"over the limit, past the buffer", 5000, "data: a\n\ndata: " + strings.Repeat("x", 10000) + "\n\n", []ev{{"", "a"}}, true},
		{"far over the default", 0, "data: " + strings.Repeat("x", sse.DefaultMaxLine+1), nil, true},
		{"exactly the default", 0, "data: " + strings.Repeat("x", sse.DefaultMaxLine-6) + "\n\n", []ev{{"", strings.Repeat("x", sse.DefaultMaxLine-6)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readAll(sse.NewReader(strings.NewReader(tt.in), tt.max))
			if tt.tooLong != errors.Is(err, sse.ErrLineTooLong) || (!tt.tooLong && err != nil) {
				t.Errorf("error %v, want ErrLineTooLong: %v", err, tt.tooLong)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReaderReset(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 9000)
	rd := sse.NewReader(strings.NewReader("event: old\ndata: "+long+"\n\nevent: half\ndata: half"), 0)
	if e, d, err := rd.Next(); err != nil || string(e) != "old" || string(d) != long {
		t.Fatalf("first stream: %q, %d bytes, %v", e, len(d), err)
	}
	// Reset in the middle of an event: nothing of it may leak into the
	// next stream.
	rd.Reset(strings.NewReader("data: new\n\n"))
	got, err := readAll(rd)
	if err != nil || !cmp.Equal(got, []ev{{"", "new"}}) {
		t.Errorf("after Reset: %q, %v; want [new]", got, err)
	}
	// Reset mid-line, a long one at that.
	rd.Reset(&pieces{s: "data: " + long + "\n\n", n: 5000})
	if _, _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	rd.Reset(strings.NewReader("data: again\n\n"))
	if got, err := readAll(rd); err != nil || !cmp.Equal(got, []ev{{"", "again"}}) {
		t.Errorf("after a second Reset: %q, %v; want [again]", got, err)
	}
}

// loop reads s over and over, without allocating.
type loop struct {
	s   []byte
	off int
}

func (l *loop) Read(b []byte) (int, error) {
	n := copy(b, l.s[l.off:])
	l.off = (l.off + n) % len(l.s)
	return n, nil
}

func TestReaderAllocs(t *testing.T) {
	tests := map[string]string{
		"openai":    `data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n",
		"anthropic": "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}\n\n: ping\n\n",
		"crlf":      "event: x\r\ndata: a\r\ndata: b\r\n\r\n",
		"long":      "data: " + strings.Repeat("z", 9000) + "\n\n",
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			rd := sse.NewReader(&loop{s: []byte(s)}, 0)
			for range 10 { // grow the buffers
				if _, _, err := rd.Next(); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(1000, func() {
				if _, _, err := rd.Next(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("Next allocates %v times per event in steady state, want 0", allocs)
			}
		})
	}
}

// reference is a plain reading of the format as this package implements
// it: lines end at LF, one CR before it is dropped, a line longer than
// max (counting its CR, not its LF) is an error, and an unfinished last
// event counts.
func reference(in []byte, max int) (evs []ev, tooLong bool) {
	var (
		event, data []byte
		hasData     bool
	)
	for len(in) > 0 {
		line := in
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line, in = in[:i], in[i+1:]
		} else {
			in = nil
		}
		if len(line) > max {
			return evs, true
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			if hasData {
				evs = append(evs, ev{string(event), string(data)})
			}
			event, data, hasData = nil, nil, false
		case line[0] == ':':
		default:
			field, value, _ := strings.Cut(string(line), ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			case "event":
				event = []byte(value)
			}
		}
	}
	if hasData {
		evs = append(evs, ev{string(event), string(data)})
	}
	return evs, false
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "event: e\ndata: a\ndata: b\n\n", "data: a\r\n\r\n", ": c\n\ndata:x", "data\n\n",
		"data: a\rdata: b\n\n", "event: x\n\ndata: y", "\n\n\n", "id: 1\nretry: 2\n\n", "data: " + strings.Repeat("w", 5000) + "\n\n",
	} {
		f.Add([]byte(s), uint8(0), uint8(0))
		f.Add([]byte(s), uint8(7), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, max, piece uint8) {
		limit := int(max) // 0: the default
		refLimit := limit
		if limit == 0 {
			refLimit = sse.DefaultMaxLine
		}
		var r io.Reader = bytes.NewReader(in)
		if piece > 0 {
			r = &pieces{s: string(in), n: int(piece)}
		}
		got, err := readAll(sse.NewReader(r, limit))
		if err != nil && !errors.Is(err, sse.ErrLineTooLong) {
			t.Fatalf("unexpected error %v", err)
		}
		want, tooLong := reference(in, refLimit)
		if tooLong != (err != nil) {
			t.Errorf("error %v, reference says too long: %v", err, tooLong)
		}
		if !cmp.Equal(want, got, cmp.Comparer(func(a, b ev) bool { return a == b })) {
			t.Errorf("input %q, limit %d:\n got %q\nwant %q", in, limit, got, want)
		}
	})
}

func ExampleReader() {
	rd := sse.NewReader(strings.NewReader("event: greeting\ndata: hello\ndata: world\n\n: keep-alive\n\ndata: [DONE]\n\n"), 0)
	for {
		event, data, err := rd.Next()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%q %q\n", event, data)
	}
	// Output:
	// "greeting" "hello\nworld"
	// "" "[DONE]"
	// EOF
}
