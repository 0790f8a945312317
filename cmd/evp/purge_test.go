package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

// `evp purge` against the local stack: queue a purge, follow it to
// completed, see refusals with their code, list dead letters.
func TestPurgeCommands(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	out, err := run(t, ctx, "", "purge", "tags", "--url", st.URL(), "--tenant", "acme", "tenant:acme:page:/pricing", "tenant:acme:posts:launch")
	require.NoError(t, err, out)
	m := regexp.MustCompile(`^(pj_[0-9a-f]{32}) queued\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id := m[1]

	require.Eventually(t, func() bool {
		out, err := run(t, ctx, "", "purge", "status", "--url", st.URL(), "--json", id)
		if err != nil {
			return false
		}
		var j cachepurge.Job
		return json.Unmarshal([]byte(out), &j) == nil && j.Status == cachepurge.StatusCompleted && *j.Purged == 2
	}, 20*time.Second, 100*time.Millisecond)
	out, err = run(t, ctx, "", "purge", "status", "--url", st.URL(), id)
	require.NoError(t, err)
	require.Regexp(t, `Status\s+completed`, out)
	require.Regexp(t, `Tags\s+tenant:acme:page:/pricing tenant:acme:posts:launch`, out)

	out, err = run(t, ctx, "", "purge", "tags", "--url", st.URL(), "--tenant", "acme", "tenant:globex")
	require.Error(t, err)
	require.Contains(t, err.Error(), cachepurge.CodeCrossTenantTag)
	_, err = run(t, ctx, "", "purge", "status", "--url", st.URL(), "pj_00000000000000000000000000000000")
	require.ErrorContains(t, err, "no purge job")

	out, err = run(t, ctx, "", "purge", "dlq", "--url", st.URL())
	require.NoError(t, err)
	require.Contains(t, out, "no dead letters")
}
