package webhook

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// TenantMap attributes provider events to platform tenants. On the wire
// (an environment variable) it is JSON:
//
//	{"accounts": {"acct_1Nv0FGQ9RKHgCVdK": "acme"}, "default": "acme"}
//
// Accounts maps a provider account (a Stripe Connect account id, a GitHub
// installation, …) to a tenant; Default, when set, takes every event no
// other rule attributes. Each provider documents the order it applies them
// in.
type TenantMap struct {
	Accounts map[string]string `json:"accounts,omitempty"`
	Default  string            `json:"default,omitempty"`
}

// Account returns the tenant mapped to a provider account.
func (m TenantMap) Account(account string) (string, bool) {
	if account == "" {
		return "", false
	}
	t, ok := m.Accounts[account]
	return t, ok && t != ""
}

// Validate checks every tenant id is one ingest accepts, so a typo fails
// the cold start instead of rejecting events one by one.
func (m TenantMap) Validate() error {
	var errs []error
	for _, acct := range slices.Sorted(maps.Keys(m.Accounts)) {
		if acct == "" {
			errs = append(errs, errors.New("tenant map: empty account key"))
			continue
		}
		if !envelope.ValidTenant(m.Accounts[acct]) {
			errs = append(errs, fmt.Errorf("tenant map: account %q maps to invalid tenant id %q", acct, m.Accounts[acct]))
		}
	}
	if m.Default != "" && !envelope.ValidTenant(m.Default) {
		errs = append(errs, fmt.Errorf("tenant map: invalid default tenant id %q", m.Default))
	}
	return errors.Join(errs...)
}
