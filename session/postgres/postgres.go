// Package postgres is a session.Store on PostgreSQL, through pgx's pool
// (github.com/jackc/pgx/v5/pgxpool): the store for many processes and
// replicas sharing sessions. It has every capability of the embedded
// stores — leases with fencing (session.Leaser), following
// (session.Follower, with LISTEN/NOTIFY across processes), control
// requests (session.Controller), the inbox (session.Inbox), the indexes of
// pending requests and of expired leases (session.RequestIndex,
// session.LeaseIndex) — and passes the storetest suite. It also relays
// live events (tokens) between the processes that share it
// (session.Relay), which the embedded stores, one process's each, have no
// need of.
//
//	st, err := postgres.Open(ctx, "postgres://agentrt@db/agentrt")
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//
// Open runs the schema's versioned migrations (under an advisory lock, so
// that replicas starting together migrate once) and refuses a database
// written by a newer build.
//
// Leases expire by the store's clock (time.Now unless WithClock says
// otherwise): replicas sharing a database should keep their clocks in
// step (NTP), as they would for any lease.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/internal/follow"
	"github.com/agentrt/agentrt/session/internal/group"
)

const (
	defaultLimit = 50
	pageSize     = 256
	// notifyChannel is where commits announce themselves to followers in
	// other processes; the payload is "tenant\nid".
	notifyChannel = "agentrt_events"
)

// Store is a session.Store on a PostgreSQL database. All methods are safe
// for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	now    func() time.Time
	poll   time.Duration
	schema string // the search_path schema, when WithSchema set one

	// Follow's followers: a commit of this process hands its session's
	// its events; a notification from another process makes them read.
	// self names this Store in the notifications of its commits, so that
	// its listener skips what it handed already.
	waiters follow.Waiters
	self    string

	// The group commit: the commits of many sessions that wait together
	// go in one round trip (see flushCommits).
	commits *group.Group[*pendingCommit]
	submits *group.Group[*pendingSubmit] // inbox submits, batched: see flushSubmits

	relay relayHub // live messages between processes: see relay.go

	listenOnce  sync.Once
	listenStop  context.CancelFunc
	listenDone  chan struct{}
	listenReady chan struct{}

	closeOnce sync.Once
}

var (
	_ session.Store      = (*Store)(nil)
	_ session.Leaser     = (*Store)(nil)
	_ session.Dropper    = (*Store)(nil)
	_ session.Follower   = (*Store)(nil)
	_ session.Controller = (*Store)(nil)
)

// An Option configures Open.
type Option func(*Store)

// WithClock makes the store read the time from now for leases' expiry.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithPollInterval sets how often a Follow that has heard nothing checks
// for new events anyway (a notification lost with a dropped connection),
// and how soon a broken listening connection is made again; default
// DefaultPollInterval.
func WithPollInterval(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.poll = d
		}
	}
}

// WithSchema keeps the store's tables in the named schema (created if
// need be) rather than the connection's default: for tests, and for
// several agentrt installations in one database.
func WithSchema(name string) Option { return func(s *Store) { s.schema = name } }

// maxBatch is the most commits one round trip of the group commit holds.
const maxBatch = 256

// DefaultPollInterval is how often an idle Follow looks for events it
// was not notified of (WithPollInterval).
const DefaultPollInterval = time.Second

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value DSN, as pgx takes them), migrates the schema and returns the
// store. Errors never show the DSN's password.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	st := &Store{now: time.Now, poll: DefaultPollInterval, self: rand.Text()}
	for _, o := range opts {
		o(st)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %s", Redact(dsn), redactErr(err, dsn))
	}
	if st.schema != "" {
		if !validIdent(st.schema) {
			return nil, fmt.Errorf("postgres: schema %q: want letters, digits and '_'", st.schema)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = st.schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %s", Redact(dsn), redactErr(err, dsn))
	}
	st.pool = pool
	// Half the pool writes batches of commits; the rest stays for reads,
	// leases and the listener.
	st.commits = group.New(maxBatch, max(1, int(cfg.MaxConns)/2), st.flushCommits)
	st.submits = group.New(maxBatch, 1, st.flushSubmits)
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: cannot reach %s: %s", Redact(dsn), redactErr(err, dsn))
	}
	if err := st.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", Redact(dsn), err)
	}
	if err := st.initRelay(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", Redact(dsn), err)
	}
	return st, nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// urlPassword finds the password of a URL that may not parse.
var urlPassword = regexp.MustCompile(`(://[^:/@]*:)[^@/]*@`)

// Redact returns dsn with its password replaced by "xxxxx".
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	if strings.Contains(dsn, "://") {
		return redactSecrets(dsn, dsn)
	}
	// key=value form: drop password=...
	fields := strings.Fields(dsn)
	for i, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			fields[i] = "password=xxxxx"
		}
	}
	return strings.Join(fields, " ")
}

// secrets returns the passwords written in dsn: in the URL's user info, in
// its password parameter, or as a password= field.
func secrets(dsn string) []string {
	var out []string
	if u, err := url.Parse(dsn); err == nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		out = append(out, u.Query()["password"]...)
	} else if m := urlPassword.FindStringSubmatch(dsn); m != nil {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(m[0], m[1]), "@"))
	}
	for f := range strings.FieldsSeq(dsn) {
		if v, ok := strings.CutPrefix(strings.ToLower(f), "password="); ok && v != "" {
			out = append(out, f[len("password="):])
		}
	}
	if i := strings.Index(strings.ToLower(dsn), "password="); i >= 0 {
		// A password parameter of a URL that does not parse.
		v := dsn[i+len("password="):]
		if j := strings.IndexAny(v, "& "); j >= 0 {
			v = v[:j]
		}
		out = append(out, v)
	}
	return out
}

// redactSecrets returns text with dsn's passwords replaced by xxxxx.
func redactSecrets(text, dsn string) string {
	for _, p := range secrets(dsn) {
		if p != "" {
			text = strings.ReplaceAll(text, p, "xxxxx")
		}
	}
	return text
}

// redactErr returns err's text without dsn's password, which pgx may
// quote.
func redactErr(err error, dsn string) string {
	return redactSecrets(err.Error(), dsn)
}

// Close stops following and closes the pool. It is idempotent.
func (st *Store) Close() error {
	st.closeOnce.Do(func() {
		if st.listenStop != nil {
			st.listenStop()
			<-st.listenDone
		}
		st.pool.Close()
	})
	return nil
}

// CreateSession stores s in the context's tenant.
func (st *Store) CreateSession(ctx context.Context, s *session.Session) error {
	return st.create(ctx, s, session.Lease{})
}

// CreateOrAcquire gives owner the lease of session s.ID, creating it if
// need be. See session.LeasedCreator.
func (st *Store) CreateOrAcquire(ctx context.Context, s *session.Session, owner string, ttl time.Duration) (*session.Session, session.Lease, bool, error) {
	return session.CreateThenAcquire(ctx, st, "postgres", st.create, st.now(), s, owner, ttl)
}

// create stores s with lease l (none if l has no owner).
func (st *Store) create(ctx context.Context, s *session.Session, l session.Lease) error {
	if s.ID == "" {
		return errors.New("postgres: create session: empty id")
	}
	tenant := session.TenantOf(ctx)
	if s.Tenant != "" && s.Tenant != tenant {
		return fmt.Errorf("postgres: create session %q: its tenant %q is not the context's %q", s.ID, s.Tenant, tenant)
	}
	usage, err := json.Marshal(s.Usage)
	if err != nil {
		return fmt.Errorf("postgres: create session %q: %w", s.ID, err)
	}
	var metadata *string
	if len(s.Metadata) > 0 {
		b, err := json.Marshal(s.Metadata)
		if err != nil {
			return fmt.Errorf("postgres: create session %q: %w", s.ID, err)
		}
		m := string(b)
		metadata = &m
	}
	created, updated := s.CreatedAt, s.UpdatedAt
	if created.IsZero() {
		created = time.Now()
	}
	if updated.IsZero() {
		updated = created
	}
	var owner *string // NULL when not leased
	var expires int64
	if l.Owner != "" {
		owner, expires = &l.Owner, l.Expires.UnixMicro()
	}
	tag, err := st.pool.Exec(ctx, `INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, metadata, created_at, updated_at,
			lease_owner, lease_token, lease_expires)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $9, $10, $11, $12) ON CONFLICT (tenant, id) DO NOTHING`,
		tenant, s.ID, s.Agent, string(s.Status), s.Turn, string(usage), metadata, created.UnixMicro(), updated.UnixMicro(),
		owner, l.Token, expires)
	if err != nil {
		return fmt.Errorf("postgres: create session %q: %w", s.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: create session %q: %w", s.ID, session.ErrExists)
	}
	s.Tenant = tenant
	return nil
}

const selectColumns = `tenant, id, agent, status, turn, usage, last_seq, metadata, created_at, updated_at, lease_owner, lease_token, lease_expires, control`

func scanSession(row pgx.Row) (*session.Session, error) {
	var (
		s                session.Session
		status, usage    string
		metadata         *string
		created, updated int64
		leaseOwner       *string
		leaseToken       int64
		leaseExpires     int64
		control          *string
	)
	if err := row.Scan(&s.Tenant, &s.ID, &s.Agent, &status, &s.Turn, &usage, &s.LastSeq, &metadata, &created, &updated,
		&leaseOwner, &leaseToken, &leaseExpires, &control); err != nil {
		return nil, err
	}
	if control != nil {
		s.Control = new(session.Control)
		if err := json.Unmarshal([]byte(*control), s.Control); err != nil {
			return nil, fmt.Errorf("session %q: corrupt control request: %w", s.ID, err)
		}
	}
	s.Status = session.Status(status)
	if err := json.Unmarshal([]byte(usage), &s.Usage); err != nil {
		return nil, fmt.Errorf("session %q: corrupt usage: %w", s.ID, err)
	}
	if metadata != nil {
		if err := json.Unmarshal([]byte(*metadata), &s.Metadata); err != nil {
			return nil, fmt.Errorf("session %q: corrupt metadata: %w", s.ID, err)
		}
	}
	s.CreatedAt = time.UnixMicro(created).UTC()
	s.UpdatedAt = time.UnixMicro(updated).UTC()
	if leaseOwner != nil {
		s.Lease = &session.Lease{SessionID: s.ID, Owner: *leaseOwner, Token: leaseToken, Expires: time.UnixMicro(leaseExpires).UTC()}
	}
	return &s, nil
}

// GetSession returns the session's row.
func (st *Store) GetSession(ctx context.Context, id string) (*session.Session, error) {
	s, err := scanSession(st.pool.QueryRow(ctx, `SELECT `+selectColumns+` FROM sessions WHERE tenant = $1 AND id = $2`,
		session.TenantOf(ctx), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("get session", id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get session %q: %w", id, err)
	}
	return s, nil
}

// ListSessions returns sessions newest first: by CreatedAt, then by ID
// (then by tenant before ID across tenants), descending.
func (st *Store) ListSessions(ctx context.Context, opt session.ListOptions) ([]*session.Session, error) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	tenant := session.TenantOf(ctx)
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if !opt.AllTenants {
		where = append(where, "tenant = "+arg(tenant))
	}
	if opt.Status != "" {
		where = append(where, "status = "+arg(string(opt.Status)))
	}
	if opt.Agent != "" {
		where = append(where, "agent = "+arg(opt.Agent))
	}
	if opt.SkipHidden {
		// In the query, so that a page is full (session.Hidden's two
		// prefixes are seven bytes long).
		where = append(where, "left(id, 7) NOT IN ('_rules.', '_claim.')")
	}
	order := "created_at DESC, id DESC"
	if opt.AllTenants {
		order = "created_at DESC, tenant DESC, id DESC"
	}
	if opt.After != "" {
		ct := tenant
		if opt.AllTenants && opt.AfterTenant != "" {
			ct = opt.AfterTenant
		} else if opt.AllTenants {
			ct = session.DefaultTenant
		}
		created := opt.AfterCreated.UnixMicro()
		if opt.AfterCreated.IsZero() {
			err := st.pool.QueryRow(ctx, `SELECT created_at FROM sessions WHERE tenant = $1 AND id = $2`, ct, opt.After).Scan(&created)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, notFound("list sessions after", opt.After)
			}
			if err != nil {
				return nil, fmt.Errorf("postgres: list sessions: %w", err)
			}
		}
		if opt.AllTenants {
			where = append(where, fmt.Sprintf("(created_at, tenant, id) < (%s, %s, %s)", arg(created), arg(ct), arg(opt.After)))
		} else {
			where = append(where, fmt.Sprintf("(created_at, id) < (%s, %s)", arg(created), arg(opt.After)))
		}
	}
	q := `SELECT ` + selectColumns + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY ` + order + ` LIMIT ` + arg(limit)
	rows, err := st.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	defer rows.Close()
	var out []*session.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list sessions: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession removes a session, its events, its snapshot and its
// pending requests, in one transaction.
func (st *Store) DeleteSession(ctx context.Context, id string) error {
	tenant := session.TenantOf(ctx)
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE tenant = $1 AND id = $2`, tenant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return session.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE tenant = $1 AND session_id = $2`, tenant, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM snapshots WHERE tenant = $1 AND session_id = $2`, tenant, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM requests WHERE tenant = $1 AND session_id = $2`, tenant, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM records WHERE tenant = $1 AND session_id = $2`, tenant, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM outbox WHERE tenant = $1 AND session_id = $2`, tenant, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, tenant+"\n"+id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete session %q: %w", id, err)
	}
	if st.waiters.Any() {
		st.waiters.Wake(tenant, id)
	}
	return nil
}

func notFound(op, id string) error {
	return fmt.Errorf("postgres: %s %q: %w", op, id, session.ErrNotFound)
}

// isCanceled reports whether err is a context's, however pgx wrapped it.
func isCanceled(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) && pe.Code == "57014"
}
