package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
)

// The inspector's sign-in (ui.go). With API keys, a person gives a key
// once (POST /ui/login) and gets a cookie the server signed: the key's
// hash (never the key), when it expires, signed with HMAC-SHA256 under
// Config.UISecret. The cookie is HttpOnly and SameSite=Strict, so no
// script reads it and no other site's page sends it; restarting with
// another secret (a random one by default: every restart) signs everybody
// out. Without keys the inspector answers clients on this machine only,
// as the API does.

// uiCookie is the name of the inspector's session cookie.
const uiCookie = "agentrt_ui"

// uiSessionTTL is how long a sign-in lasts.
const uiSessionTTL = 12 * time.Hour

// uiSigner signs the inspector's cookies and CSRF tokens.
type uiSigner struct{ secret []byte }

func newUISigner(secret []byte) (*uiSigner, error) {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
	}
	return &uiSigner{secret: secret}, nil
}

func (s *uiSigner) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, s.secret)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// cookie returns the value of a sign-in with the key of hash until exp.
func (s *uiSigner) cookie(hash [sha256.Size]byte, exp time.Time) string {
	body := hex.EncodeToString(hash[:]) + "." + strconv.FormatInt(exp.Unix(), 10)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.mac("session", body))
}

// verify returns the key hash a cookie value signs, if it is this
// server's and has not expired.
func (s *uiSigner) verify(v string, now time.Time) ([sha256.Size]byte, bool) {
	var hash [sha256.Size]byte
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return hash, false
	}
	body, sig := v[:i], v[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac("session", body)) {
		return hash, false
	}
	h, exp, ok := strings.Cut(body, ".")
	sec, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || now.Unix() >= sec {
		return hash, false
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return hash, false
	}
	copy(hash[:], b)
	return hash, true
}

// csrf is the token a form of the signed-in person carries: bound to
// their cookie (or, without keys, to this server), so that a page of
// another site cannot forge one even where a browser would send the form.
func (s *uiSigner) csrf(r *http.Request) string {
	bind := "local"
	if c, err := r.Cookie(uiCookie); err == nil {
		bind = c.Value
	}
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", bind))
}

// flash signs a form's error for the page it goes back to (uiBack).
func (s *uiSigner) flash(rid, msg string) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("flash", rid, msg))[:22]
}

func (s *uiSigner) csrfOK(r *http.Request, token string) bool {
	want := s.csrf(r)
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

// uiAuthenticate scopes an inspector request to the signed-in key's tenant
// and principal; a request without a valid sign-in goes to the sign-in page
// (a GET) or is refused (anything else). Without keys, loopback only.
func (s *Server) uiAuthenticate(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, principal, budget := s.cfg.Tenant, "local", &s.local
		if len(s.keys.keys) == 0 {
			if !loopback(r) {
				s.uiRefuse(w, r, http.StatusUnauthorized, "this server has no API keys and answers only clients on this machine")
				return
			}
		} else {
			e := s.uiKey(r)
			if e == nil {
				if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") {
					http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				s.uiRefuse(w, r, http.StatusUnauthorized, "sign in with an API key first")
				return
			}
			if retry, err := s.overRate(e); err != nil {
				w.Header().Set("Retry-After", strconv.Itoa(retry))
				_, detail := statusOf(err)
				s.uiRefuse(w, r, http.StatusTooManyRequests, detail.Message)
				return
			}
			tenant, principal, budget = e.tenant, e.principal, &e.streams
		}
		h(w, scoped(w, r, tenant, principal, budget))
	}
}

// uiKey is the key a request's cookie signs in with, nil if none: a
// cookie of another server (secret), expired, or of a key no longer
// configured.
func (s *Server) uiKey(r *http.Request) *keyEntry {
	c, err := r.Cookie(uiCookie)
	if err != nil {
		return nil
	}
	hash, ok := s.ui.verify(c.Value, s.now())
	if !ok {
		return nil
	}
	for _, e := range s.keys.keys {
		if e.hash == hash {
			return e
		}
	}
	return nil
}

// uiCSRF refuses a form without this person's CSRF token.
func (s *Server) uiCSRF(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !s.ui.csrfOK(r, r.PostFormValue("csrf")) {
			s.uiRefuse(w, r, http.StatusForbidden, "the form's CSRF token is missing or not this sign-in's: reload the page and send it again")
			return
		}
		h(w, r)
	}
}

// acceptsForm refuses a body that is not a form: the inspector's POSTs
// are HTML forms (application/x-www-form-urlencoded).
func (s *Server) acceptsForm(rt Route, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
			if !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
				writeError(w, r, s.log, policyError(agentrt.CodeUnsupportedMediaType,
					"%s %s takes a form: send Content-Type: application/x-www-form-urlencoded", r.Method, rt.Pattern))
				return
			}
		}
		next(w, r)
	}
}
