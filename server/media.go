package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/fetch"
)

// FetchConfig says which URLs the server fetches when a client names an
// image or a file by URL in a protocol adapter's request (an OpenAI
// image_url or file_url, an AG-UI url source, an A2A part's url). The
// zero value fetches none: a client sends the bytes (a data: URL, or
// base64).
type FetchConfig struct {
	// AllowedHosts are the hosts whose URLs are fetched: a name
	// ("images.example.com"), "*.example.com" (the names under it), an
	// address, or "*" (any host).
	AllowedHosts []string
	// AllowedNetworks are networks a fetch may reach although they are
	// not public (an image server of the operator's own, at 10.1.2.0/24).
	// Whatever they say, a fetch reaches only public addresses otherwise:
	// not loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
	// link-local (169.254/16, the clouds' metadata service, fe80::/10),
	// shared (100.64/10), multicast or unspecified ones, in any of their
	// IPv6 forms — checked on the address dialed, redirects included.
	AllowedNetworks []netip.Prefix
	// Timeout bounds a fetch, its redirects and its body; zero: 10 s.
	Timeout time.Duration
}

// newFetcher makes the server's fetcher; its byte limit is the
// gateway's for a file of an input.
func newFetcher(cfg FetchConfig, maxBytes int64) (*fetch.Fetcher, error) {
	var allow func(netip.Addr) bool
	if nets := cfg.AllowedNetworks; len(nets) > 0 {
		allow = func(ip netip.Addr) bool {
			for _, n := range nets {
				if n.Masked().Contains(ip) {
					return true
				}
			}
			return false
		}
	}
	f, err := fetch.New(fetch.Config{Hosts: cfg.AllowedHosts, Allow: allow, Timeout: cfg.Timeout, MaxBytes: maxBytes})
	if err != nil {
		return nil, fmt.Errorf("server: Fetch.AllowedHosts: %w", err)
	}
	return f, nil
}

// MediaRef is an image or a file a client's message names, as a protocol
// adapter read it: its bytes (Data, or Base64), or a URL — a data: URL,
// or an http(s) URL the server fetches (Config.Fetch).
type MediaRef struct {
	// Where names the part in the client's request, for errors
	// ("messages[1].content[0]").
	Where string
	// Kind is what the part says it is: "image", "audio" or "video",
	// whose media type must be of that kind, or "" (a file of any type).
	Kind string
	// One of URL, Base64 and Data holds the bytes.
	URL    string
	Base64 string
	Data   []byte
	// Type is the media type the client gave: a data: URL's own, or a
	// fetched answer's Content-Type, win over it; with none, the bytes
	// tell (http.DetectContentType).
	Type string
	// Name is the file's name; empty: a fetched answer's.
	Name string
}

// ClientFile reads ref into a file of an input (gateway.Input.Files):
// decodes its base64 or data: URL, or fetches its URL. The error is an
// *agentrt.Error naming ref.Where: bad_part (malformed, not base64, empty,
// of a type its kind does not take, a fetch that failed), url_refused (a
// URL the server does not fetch), input_too_large (over the gateway's
// MaxFileBytes).
func (s *Server) ClientFile(ctx context.Context, ref MediaRef) (gateway.File, error) {
	bad := func(code, format string, args ...any) error {
		return &agentrt.Error{Kind: agentrt.FailInput, Code: code, Msg: ref.Where + ": " + fmt.Sprintf(format, args...)}
	}
	data, typ, name := ref.Data, ref.Type, ref.Name
	switch {
	case ref.Data != nil:
	case ref.Base64 != "":
		var err error
		if data, err = decode64(ref.Base64); err != nil {
			return gateway.File{}, bad(agentrt.CodeBadPart, "the data is not base64")
		}
	case hasPrefixFold(ref.URL, "data:"):
		t, d, err := parseDataURL(ref.URL)
		if err != nil {
			return gateway.File{}, bad(agentrt.CodeBadPart, "%v", err)
		}
		data = d
		if t != "" {
			typ = t
		}
	case ref.URL != "":
		f, err := s.fetch.Fetch(ctx, ref.URL)
		switch {
		case errors.Is(err, fetch.ErrRefused):
			return gateway.File{}, bad(agentrt.CodeURLRefused, "the URL is not fetched: %v (send the bytes instead, as a data: URL; the server's fetch settings say which hosts it fetches from)", err)
		case errors.Is(err, fetch.ErrTooLarge):
			return gateway.File{}, bad(agentrt.CodeInputTooLarge, "%v", err)
		case err != nil:
			return gateway.File{}, bad(agentrt.CodeBadPart, "the URL could not be fetched: %v", err)
		}
		data, typ = f.Data, f.Type
		if name == "" {
			name = f.Name
		}
	default:
		return gateway.File{}, bad(agentrt.CodeBadPart, "no bytes: want a data: URL, base64 data or a URL")
	}
	if len(data) == 0 {
		return gateway.File{}, bad(agentrt.CodeBadPart, "the file is empty")
	}
	if max := s.gw.MaxFileBytes(); int64(len(data)) > max {
		return gateway.File{}, bad(agentrt.CodeInputTooLarge, "the file holds %d bytes; at most %d are taken", len(data), max)
	}
	if strings.TrimSpace(typ) == "" {
		typ = http.DetectContentType(data)
	}
	mt, _, err := mime.ParseMediaType(typ)
	if err != nil {
		return gateway.File{}, bad(agentrt.CodeBadPart, "%q is not a media type", typ)
	}
	if ref.Kind != "" && !strings.HasPrefix(mt, ref.Kind+"/") {
		return gateway.File{}, bad(agentrt.CodeBadPart, "the %s is %s, not a type of %s (%s/…)", ref.Kind, mt, ref.Kind, ref.Kind)
	}
	return gateway.File{Name: name, Type: mt, Data: data}, nil
}

// ClientFiles reads refs with ClientFile, in order, and stops at the
// first that fails — or once they hold more than the gateway takes for
// one input (input_too_large), so that a request naming many URLs does
// not make the server fetch far more than it could keep. i is the index
// of the ref an error is about.
func (s *Server) ClientFiles(ctx context.Context, refs []MediaRef) (files []gateway.File, i int, err error) {
	var total int64
	for i, ref := range refs {
		f, err := s.ClientFile(ctx, ref)
		if err != nil {
			return nil, i, err
		}
		if total += int64(len(f.Data)); total > s.gw.MaxInputFileBytes() {
			return nil, i, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeInputTooLarge,
				Msg: fmt.Sprintf("%s: the input's files hold more than %d bytes", ref.Where, s.gw.MaxInputFileBytes())}
		}
		files = append(files, f)
	}
	return files, 0, nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// decode64 decodes standard base64, padded or not.
func decode64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// parseDataURL reads a data: URL (RFC 2397): data:[TYPE][;base64],DATA.
// Its type is "" when it gives none.
func parseDataURL(s string) (typ string, data []byte, err error) {
	meta, payload, ok := strings.Cut(s[len("data:"):], ",")
	if !ok {
		return "", nil, errors.New("a malformed data: URL (want data:TYPE;base64,DATA)")
	}
	b64 := false
	if i := strings.LastIndex(meta, ";"); i >= 0 && strings.EqualFold(meta[i+1:], "base64") {
		meta, b64 = meta[:i], true
	}
	if meta != "" {
		if _, _, err := mime.ParseMediaType(meta); err != nil {
			return "", nil, fmt.Errorf("a malformed data: URL: %q is not a media type", meta)
		}
	}
	if b64 {
		if data, err = decode64(payload); err != nil {
			return "", nil, errors.New("the data: URL's data is not base64")
		}
		return meta, data, nil
	}
	p, err := url.PathUnescape(payload)
	if err != nil {
		return "", nil, errors.New("a malformed data: URL: its data is neither base64 nor URL-escaped")
	}
	return meta, []byte(p), nil
}
