package weborigin

import "testing"

// An origin is written as a browser sends it in Origin, so that a listed
// origin matches the header by string; anything else is refused with why.
func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"https://app.example.com":      "https://app.example.com",
		"HTTPS://App.Example.COM":      "https://app.example.com",
		"https://app.example.com:443":  "https://app.example.com",
		"http://app.example.com:80":    "http://app.example.com",
		"http://localhost:3000":        "http://localhost:3000",
		"http://[::1]:3000":            "http://[::1]:3000",
		"https://app.example.com:8443": "https://app.example.com:8443",
	} {
		if got, err := Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "null", "*", "app.example.com", "ftp://app.example.com", "https://app.example.com/",
		"https://app.example.com/ui", "https://app.example.com?x", "https://app.example.com#x", "https://u@app.example.com",
		"https://app.example.com:0", "https://app.example.com:99999", "https://"} {
		if got, err := Normalize(bad); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", bad, got)
		}
	}
}

// An allowed host compares with a request's Host as Split gives it.
func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"agents.example.com":      "agents.example.com",
		"Agents.Example.com.":     "agents.example.com",
		"agents.example.com:8443": "agents.example.com:8443",
		"10.0.0.5":                "10.0.0.5",
		"[::1]:8080":              "[::1]:8080",
		"::1":                     "::1",
	} {
		if got, err := NormalizeHost(in); err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "https://agents.example.com", "agents.example.com/x", "*.example.com", "a b", "host:0", "host:x", "a:b:c"} {
		if got, err := NormalizeHost(bad); err == nil {
			t.Errorf("NormalizeHost(%q) = %q, want an error", bad, got)
		}
	}
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"localhost.example": false, "10.0.0.1": false, "": false} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}
