package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as a Go duration ("8s", "1m30s") or
// as a whole number of seconds (120).
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String returns d in Go's notation, e.g. "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d in Go's notation, so it reads back unchanged.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText accepts what ParseDuration accepts.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDuration parses a Go duration or a whole number of seconds. Negative
// durations are an error: no timeout in agentrt runs backwards.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		if n > int64(time.Duration(1<<63-1)/time.Second) {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		return Duration(time.Duration(n) * time.Second), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf(`bad duration %q: want a Go duration such as "8s" or "2m", or whole seconds`, s)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return Duration(v), nil
}
