package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Key is an API key: who presents it (Principal, recorded as `by` of what
// they decide) and whose sessions it reaches (Tenant).
type Key struct {
	// Key is the key itself, or Hash its SHA-256 ("sha256:" and 64 hex
	// digits) when the key is kept out of the config; one of them.
	Key  string
	Hash string
	// Tenant is the tenant every request with the key is scoped to.
	Tenant string
	// Principal names the key's holder; empty: "key:" and the first 8
	// hex digits of the key's hash.
	Principal string
	// Rate is how many requests per second the key may make, Burst how
	// many at once; zero Rate: no limit.
	Rate  float64
	Burst int
	// MaxStreams is how many streams the key may hold open at once; zero:
	// the server's Config.MaxStreams.
	MaxStreams int
}

// HashKey returns the form of key a config keeps instead of the key:
// "sha256:" and its SHA-256 in hex.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// keyring finds the key of a request.
type keyring struct {
	keys []*keyEntry
}

type keyEntry struct {
	hash      [sha256.Size]byte
	tenant    string
	principal string
	limit     *rate.Limiter // nil: no limit
	streams   streamBudget
}

func newKeyring(keys []Key, maxStreams int) (*keyring, error) {
	kr := &keyring{}
	seen := map[[sha256.Size]byte]bool{}
	for i, k := range keys {
		var e keyEntry
		switch {
		case k.Key != "" && k.Hash != "":
			return nil, fmt.Errorf("server: api key %d: give the key or its hash, not both", i)
		case k.Key != "":
			e.hash = sha256.Sum256([]byte(k.Key))
		case k.Hash != "":
			h, ok := strings.CutPrefix(k.Hash, "sha256:")
			b, err := hex.DecodeString(h)
			if !ok || err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("server: api key %d: hash %q is not \"sha256:\" and 64 hex digits", i, k.Hash)
			}
			copy(e.hash[:], b)
		default:
			return nil, fmt.Errorf("server: api key %d has neither a key nor a hash", i)
		}
		if seen[e.hash] {
			return nil, fmt.Errorf("server: api key %d is given twice", i)
		}
		seen[e.hash] = true
		if err := session.CheckTenant(k.Tenant); err != nil {
			return nil, fmt.Errorf("server: api key %d: %w", i, err)
		}
		e.tenant, e.principal = k.Tenant, k.Principal
		if e.principal == "" {
			e.principal = "key:" + hex.EncodeToString(e.hash[:4])
		}
		switch {
		case k.Rate < 0 || math.IsNaN(k.Rate) || k.Burst < 0 || k.MaxStreams < 0:
			return nil, fmt.Errorf("server: api key %d: a negative rate, burst or max_streams", i)
		case k.Rate > 0:
			burst := k.Burst
			if burst == 0 {
				burst = max(1, int(math.Ceil(k.Rate)))
			}
			e.limit = rate.NewLimiter(rate.Limit(k.Rate), burst)
		}
		e.streams.max = int64(maxStreams)
		if k.MaxStreams > 0 {
			e.streams.max = int64(k.MaxStreams)
		}
		kr.keys = append(kr.keys, &e)
	}
	return kr, nil
}

// find returns the entry of the bearer token, comparing it with every
// key in constant time.
func (kr *keyring) find(token string) *keyEntry {
	sum := sha256.Sum256([]byte(token))
	var found *keyEntry
	for _, e := range kr.keys {
		if subtle.ConstantTimeCompare(sum[:], e.hash[:]) == 1 {
			found = e
		}
	}
	return found
}

// authenticate scopes a request to its key's tenant and principal, or
// refuses it: no key, an unknown key, a key over its rate. Without keys
// configured it takes only loopback clients.
func (s *Server) authenticate(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
			writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown, Msg: "the server is shutting down"})
			return
		}
		tenant, principal, budget := s.cfg.Tenant, "local", &s.local
		if len(s.keys.keys) == 0 {
			if !loopback(r) {
				writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnauthorized,
					Msg: "this server has no API keys and answers only clients on this machine"})
				return
			}
		} else {
			token, ok := bearer(r)
			var e *keyEntry
			if ok {
				e = s.keys.find(token)
			}
			if e == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentrt"`)
				msg := "an API key is required: Authorization: Bearer KEY"
				if ok {
					msg = "the API key is not one of this server's"
				}
				writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnauthorized, Msg: msg})
				return
			}
			if retry, err := s.overRate(e); err != nil {
				w.Header().Set("Retry-After", strconv.Itoa(retry))
				writeError(w, r, s.log, err)
				return
			}
			tenant, principal, budget = e.tenant, e.principal, &e.streams
		}
		h(w, scoped(w, r, tenant, principal, budget))
	}
}

// scoped is r scoped to its caller: tenant, principal (the actor of what
// it decides) and stream budget; the answer names them for the log.
func scoped(w http.ResponseWriter, r *http.Request, tenant, principal string, budget *streamBudget) *http.Request {
	noteCaller(w, tenant, principal)
	ctx := session.WithTenant(r.Context(), tenant)
	ctx = withBudget(ctx, budget)
	ctx = agentrt.WithActor(ctx, principal)
	return r.WithContext(ctx)
}

// retryAfter is d in whole seconds, at least one.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

func bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(a, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}
