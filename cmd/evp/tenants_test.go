package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// `evp tenants retention` against the local stack: a tenant without a
// policy shows the defaults; set stores one (a shorter period starts its
// purge); a stale --if-version and an out-of-range period are refused
// with their codes.
func TestTenantsRetentionCommands(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	out, err := run(t, ctx, "", "tenants", "retention", "get", "--url", st.URL(), "--tenant", "acme")
	require.NoError(t, err, out)
	require.Regexp(t, `tenant acme, policy version 0`, out)
	require.Regexp(t, `incidents\s+0\s+kept\s+kept`, out)

	out, err = run(t, ctx, "", "tenants", "retention", "set", "--url", st.URL(), "--tenant", "acme", "--events-days", "14", "--incidents-days", "90", "--exports-days", "30", "--if-version", "0")
	require.NoError(t, err, out)
	require.Regexp(t, `policy version 1`, out)
	require.Regexp(t, `exports\s+30\s+30 days\s+kept`, out)
	require.Regexp(t, `retention expiry job_[0-9a-f]+ applies it`, out, "a shorter period starts its purge")

	out, err = run(t, ctx, "", "tenants", "retention", "get", "--url", st.URL(), "--tenant", "acme", "--json")
	require.NoError(t, err, out)
	require.Contains(t, out, `"exportsDays": 30`)

	out, err = run(t, ctx, "", "tenants", "retention", "set", "--url", st.URL(), "--tenant", "acme", "--exports-days", "7", "--if-version", "0")
	require.Error(t, err)
	require.Contains(t, out+err.Error(), "version_conflict")
	out, err = run(t, ctx, "", "tenants", "retention", "set", "--url", st.URL(), "--tenant", "acme", "--events-days", "3")
	require.Error(t, err)
	require.Contains(t, out+err.Error(), "invalid_policy")
	_, err = run(t, ctx, "", "tenants", "retention", "get", "--url", st.URL())
	require.ErrorContains(t, err, "--tenant is required")
}
