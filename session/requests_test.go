package session

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// A cursor goes out as a token and comes back the same, its session id
// whatever it holds; a token that is not one is refused, saying so.
func TestRequestCursorToken(t *testing.T) {
	for _, c := range []RequestCursor{
		{},
		{Asked: time.Date(2026, 3, 14, 15, 9, 26, 535_897_000, time.UTC), SessionID: "s1", Seq: 7},
		{Asked: time.Unix(0, 0).UTC(), SessionID: "a.b:c@d.7.x", Seq: 1},
		{Asked: time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC), SessionID: "ü ✓", Seq: 1 << 40},
	} {
		tok := c.String()
		if strings.ContainsAny(tok, "+/=") {
			t.Errorf("token %q is not URL-safe", tok)
		}
		got, err := ParseRequestCursor(tok)
		if err != nil || got != c && !(got.Asked.Equal(c.Asked) && got.SessionID == c.SessionID && got.Seq == c.Seq) {
			t.Errorf("ParseRequestCursor(%q) = %+v, %v; want %+v", tok, got, err, c)
		}
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{"!!!", enc("12.3"), enc("x.3.s1"), enc("12.y.s1"), enc("12.0.s1"), enc("12.-1.s1"), enc("12.3."), "a"} {
		if _, err := ParseRequestCursor(bad); err == nil || !strings.Contains(err.Error(), "request cursor") {
			t.Errorf("ParseRequestCursor(%q): %v, want an error naming the cursor", bad, err)
		}
	}
}
