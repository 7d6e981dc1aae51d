package session

import (
	"context"
	"fmt"
)

// DefaultTenant is the tenant of a context that names none.
const DefaultTenant = "default"

type tenantKey struct{}

// WithTenant returns ctx scoped to tenant: every Store method and
// capability called with it sees only that tenant's sessions; a session
// of another tenant does not exist (ErrNotFound), whatever its id. The
// server sets it from the API key's tenant; the CLI from --tenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantOf returns the tenant ctx is scoped to, DefaultTenant if none.
func TenantOf(ctx context.Context) string {
	if t, ok := ctx.Value(tenantKey{}).(string); ok && t != "" {
		return t
	}
	return DefaultTenant
}

// CheckTenant reports whether t is a usable tenant name: 1 to 64
// characters, letters, digits, '_', '.' and '-'.
func CheckTenant(t string) error {
	if t == "" || len(t) > 64 {
		return fmt.Errorf("tenant %q: want 1 to 64 characters", t)
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return fmt.Errorf("tenant %q: want only letters, digits, '_', '.' and '-'", t)
		}
	}
	return nil
}
