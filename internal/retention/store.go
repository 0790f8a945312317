package retention

import (
	"context"
	"errors"
	"time"
)

// Store keeps the policies.
type Store interface {
	// Get reads a tenant's policy (false when it has none: the defaults).
	Get(ctx context.Context, tenant string) (Policy, bool, error)
	// Put writes p conditional on the stored version being p.Version
	// (0: none stored); ErrConflict otherwise. It returns p as stored.
	Put(ctx context.Context, p Policy) (Policy, error)
	// Tenants pages the tenants that have a policy, in tenant order.
	Tenants(ctx context.Context, cursor string) ([]string, string, error)
}

// ErrConflict: the policy changed since it was read.
var ErrConflict = errors.New("retention: the policy changed meanwhile")

// AllTenants lists every tenant with a policy.
func AllTenants(ctx context.Context, s Store) ([]string, error) {
	var out []string
	cursor := ""
	for {
		ts, next, err := s.Tenants(ctx, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// Query selects one page of a tenant's items older than Before (the
// retention expiry's reads, oldest first).
type Query struct {
	TenantID string
	Before   time.Time
	Limit    int
	Cursor   string
}
