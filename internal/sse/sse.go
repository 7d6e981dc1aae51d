// Package sse reads a server-sent event stream (the WHATWG "text/event-stream"
// format) without allocating per event.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine is the longest line a Reader accepts unless told otherwise.
const DefaultMaxLine = 4 << 20

// ErrLineTooLong is returned for a line longer than the Reader's limit.
var ErrLineTooLong = errors.New("sse: line too long")

// Reader reads events from an event stream. It is not safe for concurrent
// use.
type Reader struct {
	br      *bufio.Reader
	maxLine int
	line    []byte // a line longer than the bufio buffer, assembled here
	event   []byte // the event's type (the "event:" field)
	data    []byte // the event's data lines, joined by '\n'
	hasData bool
}

// NewReader returns a Reader of r with a 4 KiB buffer (most events fit).
// Lines longer than maxLine (0 means DefaultMaxLine) are an error.
func NewReader(r io.Reader, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Reader{br: bufio.NewReaderSize(r, 4096), maxLine: maxLine}
}

// Reset makes rd read from r, keeping its buffers.
func (rd *Reader) Reset(r io.Reader) {
	rd.br.Reset(r)
	rd.line, rd.event, rd.data, rd.hasData = rd.line[:0], rd.event[:0], rd.data[:0], false
}

// Next returns the next event's type (empty when the stream did not name
// one) and data. Both are valid until the next call. Comments and events
// without data are skipped, as the format says. At the end of the stream
// it returns io.EOF; an event not yet ended by a blank line when the
// stream ends is returned first (some servers omit the final newline),
// then io.EOF on the next call.
func (rd *Reader) Next() (event, data []byte, err error) {
	rd.event, rd.data, rd.hasData = rd.event[:0], rd.data[:0], false
	for {
		line, err := rd.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && rd.hasData {
				return rd.event, rd.data, nil
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if rd.hasData {
				return rd.event, rd.data, nil
			}
			rd.event = rd.event[:0]
			continue
		}
		if line[0] == ':' {
			continue // a comment: a keep-alive, usually
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) { // no allocation: the compiler compares in place
		case "data":
			if rd.hasData {
				rd.data = append(rd.data, '\n')
			}
			rd.data = append(rd.data, value...)
			rd.hasData = true
		case "event":
			rd.event = append(rd.event[:0], value...)
		}
		// id and retry are of no use to a client of one request; unknown
		// fields are ignored, as the format says.
	}
}

// readLine returns the next line without its end (LF, CRLF or a lone CR
// before LF), valid until the next call.
func (rd *Reader) readLine() ([]byte, error) {
	line, err := rd.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		rd.line = append(rd.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(rd.line) > rd.maxLine {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, rd.maxLine)
			}
			line, err = rd.br.ReadSlice('\n')
			rd.line = append(rd.line, line...)
		}
		line = rd.line
	}
	if len(bytes.TrimSuffix(line, []byte("\n"))) > rd.maxLine { // the limit is on the line, not its end
		return nil, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, rd.maxLine)
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return bytes.TrimSuffix(line, []byte("\r")), nil // a last line without its newline
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
