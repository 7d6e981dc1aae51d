// Package weborigin says what a web origin and an allowed Host are, for
// the server's browser policy (server/origin.go) and for the config that
// lists them (server.cors.allowed_origins, server.allowed_hosts): one
// definition, so that a value the config accepts is one the server can
// match.
package weborigin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Normalize returns origin as a browser sends it in an Origin header
// (scheme://host[:port], lower case, without the scheme's default port),
// or why it is not an origin.
func Normalize(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Opaque != "" || u.User != nil {
		return "", errors.New("want scheme://host[:port], e.g. https://app.example.com")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("want an http:// or https:// origin, e.g. https://app.example.com")
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || strings.HasSuffix(origin, "#") {
		return "", fmt.Errorf("an origin has no path, query or fragment: %s://%s", u.Scheme, u.Host)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if err := checkPort(port); err != nil {
		return "", err
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// NormalizeHost returns an allowed Host (a name or an address, with or
// without a port) as a request's compares with it — its name as Split
// gives it, joined to its port by net.JoinHostPort when it has one — or
// why it is not one.
func NormalizeHost(host string) (string, error) {
	name, port := Split(host)
	if name == "" || strings.ContainsAny(host, "/?#@* \t") || strings.ContainsAny(name, ":[]") && net.ParseIP(name) == nil {
		return "", errors.New("want a host name or address, optionally with a port, e.g. agents.example.com or agents.example.com:8443")
	}
	if port == "" {
		return name, nil
	}
	if err := checkPort(port); err != nil {
		return "", err
	}
	return net.JoinHostPort(name, port), nil
}

// Split splits a Host header into its name (lower case, without an IPv6
// address's brackets or a trailing dot) and its port (empty when it has
// none).
func Split(hostport string) (name, port string) {
	name = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		name, port = h, p
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	return name, port
}

// Loopback reports whether a Host's name is this machine's wherever it
// is resolved: localhost, or a loopback address. A web page cannot rebind
// such a name to its own.
func Loopback(name string) bool {
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name) // no allocation: this runs on every request
	return err == nil && ip.IsLoopback()
}

func checkPort(port string) error {
	if port == "" {
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}
