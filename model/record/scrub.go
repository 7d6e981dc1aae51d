package record

import (
	"net/http"
	"net/url"
	"strings"
)

// redacted replaces every scrubbed value.
const redacted = "REDACTED"

// scrubber holds what is kept out of recordings. It is built by Open and
// read-only afterwards.
type scrubber struct {
	headers map[string]bool // canonical header keys
	query   map[string]bool // lower-case parameter names
	body    []func([]byte) []byte
}

func newScrubber(opts []Option) *scrubber {
	s := &scrubber{headers: map[string]bool{}, query: map[string]bool{}}
	ScrubHeader("Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key",
		"Cookie", "Set-Cookie", "OpenAI-Organization", "OpenAI-Project", "X-Goog-Api-Key").apply(s)
	ScrubQuery("key", "api_key", "apikey", "token").apply(s)
	for _, o := range opts {
		if o.apply != nil {
			o.apply(s)
		}
	}
	return s
}

// header returns a copy of h with the scrubbed headers' values redacted.
func (s *scrubber) header(h http.Header) http.Header {
	out := h.Clone()
	for k, vs := range out {
		if s.headers[http.CanonicalHeaderKey(k)] {
			out[k] = make([]string, len(vs))
			for i := range vs {
				out[k][i] = redacted
			}
		}
	}
	return out
}

// url returns u as recorded and matched: absolute, without user
// information or fragment, with the scrubbed query parameters' values
// redacted. The rest of the query keeps its order and encoding.
func (s *scrubber) url(u *url.URL) string {
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, p := range parts {
			raw, _, _ := strings.Cut(p, "=")
			name, err := url.QueryUnescape(raw)
			if err != nil {
				name = raw
			}
			if s.query[strings.ToLower(name)] {
				parts[i] = raw + "=" + redacted
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	return c.String()
}

func (s *scrubber) applyBody(b []byte) []byte {
	for _, f := range s.body {
		b = f(b)
	}
	return b
}
