// Package fetch gets the bytes behind a URL a client named — an OpenAI
// image_url, an A2A part's url, an AG-UI url source — without letting the
// client reach into the server's own network (SSRF).
//
// A Fetcher fetches http and https URLs of the hosts it is told to allow
// (none by default), and dials only public addresses unless told
// otherwise: the address is checked where it is dialed (net.Dialer's
// Control), after the name was resolved, so a name that resolves to a
// public address when it is looked at and to 127.0.0.1 when it is dialed
// (DNS rebinding) is refused too. Every redirect is checked the same way,
// and their number bounded; the answer's body is read through the size
// limit, never whole into memory first; one time limit covers the whole
// fetch. No proxy from the environment is used: a proxy would dial for
// us, past the check.
//
// A refusal wraps ErrRefused, a body over the limit ErrTooLarge; any
// other error is a fetch that failed (no answer, a status other than
// 200, a timeout).
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"syscall"
	"time"
)

// Errors a fetch wraps.
var (
	// ErrRefused: the URL, a redirect or an address dialed is one the
	// Fetcher may not fetch (scheme, host, address).
	ErrRefused = errors.New("refused")
	// ErrTooLarge: the answer's body is over Config.MaxBytes.
	ErrTooLarge = errors.New("too large")
)

// Config configures a Fetcher. Zero values are the defaults.
type Config struct {
	// Hosts are the hosts whose URLs may be fetched: a name
	// ("images.example.com", which is that name only), "*.example.com"
	// (the names under example.com, not example.com itself), an address
	// ("203.0.113.7", "2001:db8::1"), or "*" (any host). None: nothing
	// is fetched.
	Hosts []string
	// Allow reports whether an address that is not public (Check
	// refuses it) may be dialed anyway: an image server inside the
	// operator's own network. nil: none may.
	Allow func(netip.Addr) bool
	// Timeout bounds a fetch: its connections, redirects and body. Zero:
	// DefaultTimeout.
	Timeout time.Duration
	// MaxBytes bounds the body of the answer; zero: DefaultMaxBytes.
	MaxBytes int64
	// MaxRedirects bounds the redirects a fetch follows; zero:
	// DefaultMaxRedirects, negative: none.
	MaxRedirects int
}

// Defaults.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxBytes     = 20 << 20
	DefaultMaxRedirects = 5
)

// File is what a fetch got: the body, its media type (the answer's
// Content-Type, or sniffed when it gives none or a generic one) and a
// name (the Content-Disposition filename, else the URL path's last
// element).
type File struct {
	Name string
	Type string
	Data []byte
}

// Fetcher fetches URLs. Its methods are safe for concurrent use; it
// keeps no connection open between fetches, so it needs no Close.
type Fetcher struct {
	cfg    Config
	hosts  []string // lower case, without a trailing dot
	client *http.Client
}

// New returns a Fetcher, or why cfg's hosts are not hosts.
func New(cfg Config) (*Fetcher, error) {
	if cfg.Timeout < 0 || cfg.MaxBytes < 0 {
		return nil, errors.New("fetch: the timeout and the byte limit must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0
	}
	f := &Fetcher{cfg: cfg}
	for _, h := range cfg.Hosts {
		n, err := CheckHost(h)
		if err != nil {
			return nil, fmt.Errorf("fetch: %w", err)
		}
		f.hosts = append(f.hosts, n)
	}
	d := &net.Dialer{Timeout: cfg.Timeout, Control: f.control}
	f.client = &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSHandshakeTimeout:    cfg.Timeout,
			ResponseHeaderTimeout:  cfg.Timeout,
			MaxResponseHeaderBytes: 64 << 10,
			DisableKeepAlives:      true,
			ForceAttemptHTTP2:      true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > f.cfg.MaxRedirects {
				return refuse("more than %d redirects", f.cfg.MaxRedirects)
			}
			return f.checkURL(req.URL)
		},
	}
	return f, nil
}

// CheckHost returns a host pattern of Config.Hosts as the Fetcher
// matches it, or why it is none.
func CheckHost(h string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(h))
	if n == "*" {
		return n, nil
	}
	n = strings.TrimSuffix(n, ".")
	if a, err := netip.ParseAddr(strings.Trim(n, "[]")); err == nil {
		return a.Unmap().String(), nil
	}
	name := strings.TrimPrefix(n, "*.")
	if name == "" || strings.ContainsAny(name, "*/:@ ?#[]") || strings.Contains(name, "..") || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("bad host %q: want a name (images.example.com), *.example.com, an address, or *", h)
	}
	return n, nil
}

// allowed reports whether host (lower case, from a URL) is one of the
// Fetcher's hosts.
func (f *Fetcher) allowed(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	for _, h := range f.hosts {
		switch {
		case h == "*", h == host:
			return true
		case strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]):
			return true
		}
	}
	return false
}

// checkURL refuses a URL that is not http or https, carries credentials,
// or names a host the Fetcher does not allow.
func (f *Fetcher) checkURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return refuse("%s is not an http or https URL", redact(u))
	case u.User != nil:
		return refuse("a URL with credentials is not fetched")
	case u.Hostname() == "":
		return refuse("%s has no host", redact(u))
	case len(f.hosts) == 0:
		return refuse("this server fetches no URLs")
	case !f.allowed(strings.ToLower(u.Hostname())):
		return refuse("host %s is not one this server fetches from", u.Hostname())
	}
	return nil
}

// control checks the address a connection is about to be made to.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse("dial %s: not an address", address)
	}
	ip := ap.Addr().Unmap()
	if f.cfg.Allow != nil && f.cfg.Allow(ip) {
		return nil
	}
	if err := Check(ip); err != nil {
		return refuse("%v", err)
	}
	return nil
}

// Fetch GETs raw and returns its body, type and name.
func (f *Fetcher) Fetch(ctx context.Context, raw string) (*File, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refuse("not a URL")
	}
	if err := f.checkURL(u); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, refuse("%v", err)
	}
	req.Header.Set("User-Agent", "agentrt-fetch/1")
	req.Header.Set("Accept", "*/*")
	resp, err := f.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrRefused) {
			// Named by the URL that was refused (a redirect's, maybe),
			// without the dial's words around the reason.
			where := redact(u)
			var ue *url.Error
			if errors.As(err, &ue) {
				if v, perr := url.Parse(ue.URL); perr == nil {
					where = redact(v)
				}
			}
			return nil, refuse("%s: %v", where, refusal(err))
		}
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("no answer from %s within %s", redact(u), f.cfg.Timeout)
		}
		return nil, fmt.Errorf("fetch %s: %v", redact(u), unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", redact(u), resp.Status)
	}
	max := f.cfg.MaxBytes
	if resp.ContentLength > max {
		return nil, tooLarge("%s holds %d bytes; at most %d are taken", redact(u), resp.ContentLength, max)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s was not read within %s", redact(u), f.cfg.Timeout)
		}
		return nil, fmt.Errorf("read %s: %v", redact(u), err)
	}
	if int64(len(data)) > max {
		return nil, tooLarge("%s holds more than %d bytes", redact(u), max)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s answered with no bytes", redact(u))
	}
	return &File{Name: nameOf(resp), Type: typeOf(resp.Header.Get("Content-Type"), data), Data: data}, nil
}

// kindError is an error of one of the package's kinds (ErrRefused,
// ErrTooLarge): its text says why, errors.Is tells its kind.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

func refuse(format string, args ...any) error {
	return &kindError{ErrRefused, fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &kindError{ErrTooLarge, fmt.Sprintf(format, args...)}
}

// refusal is the refusal in err's chain: the URL and dial errors around
// it repeat the URL and the address.
func refusal(err error) error {
	var ke *kindError
	if errors.As(err, &ke) {
		return ke
	}
	return err
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// redact is u without its query, which may hold a signature or a token:
// errors name it, and errors are logged and sent to clients.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

// typeOf is a body's media type: the answer's Content-Type, unless it
// gives none or a generic one, in which case the bytes tell.
func typeOf(header string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(header); err == nil && mt != "application/octet-stream" && mt != "binary/octet-stream" {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return mt
}

// nameOf is an answer's file name: Content-Disposition's, else the last
// element of the (last) URL's path.
func nameOf(resp *http.Response) string {
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
		return path.Base(params["filename"])
	}
	if resp.Request != nil {
		if b := path.Base(resp.Request.URL.Path); b != "/" && b != "." {
			return b
		}
	}
	return ""
}

// special are the address ranges a fetch does not go to by default, with
// what they are. Loopback, private, link-local, multicast and unspecified
// addresses are told by netip itself (Check).
var special = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("100::/64"), "a discard address"},
}

// embedding are IPv6 ranges that carry an IPv4 address a router may
// deliver to (NAT64, 6to4, the old IPv4-compatible form): the address
// they embed is checked too.
var embedding = []struct {
	prefix netip.Prefix
	at     int // the IPv4 address's first byte
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12},
	{netip.MustParsePrefix("2002::/16"), 2},
	{netip.MustParsePrefix("::/96"), 12},
}

// Check returns why ip is not a public address a fetch may dial by
// default (nil when it is): loopback, private (10/8, 172.16/12,
// 192.168/16, fc00::/7), link-local (169.254/16, where clouds keep their
// metadata service, and fe80::/10), unspecified, multicast, shared
// (100.64/10), reserved, and the IPv6 forms that carry one of those
// (::ffff:127.0.0.1, 64:ff9b::a00:1, 2002:7f00:1::).
func Check(ip netip.Addr) error {
	ip = ip.Unmap()
	if why := kind(ip); why != "" {
		return fmt.Errorf("%s is %s", ip, why)
	}
	if ip.Is6() {
		b := ip.As16()
		for _, e := range embedding {
			if !e.prefix.Contains(ip) || ip.IsUnspecified() {
				continue
			}
			v4 := netip.AddrFrom4([4]byte(b[e.at : e.at+4]))
			if why := kind(v4); why != "" {
				return fmt.Errorf("%s carries %s, which is %s", ip, v4, why)
			}
		}
	}
	return nil
}

func kind(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.what
		}
	}
	return ""
}
