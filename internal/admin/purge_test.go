package admin_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

// The cache purge service's admin routes: spec 001 §9 shapes, behind the
// admin key.
func TestPurgeAdminRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	store := &dynamo.Purge{Client: b.env.DynamoDB, Table: b.env.Resources.PurgeTable}
	now := time.Now().UTC()
	id := cachepurge.NewJobID()
	purged := 2
	require.NoError(t, store.Save(ctx, cachepurge.Job{JobID: id, TenantID: "acme", Tags: []string{"tenant:acme", "tenant:acme:page:/"},
		Status: cachepurge.StatusCompleted, EnqueuedAt: now, CompletedAt: &now, Purged: &purged}))
	day := now.Format(time.DateOnly)
	require.NoError(t, store.Count(ctx, cachepurge.Counts{Day: day, TenantID: "acme", Purges: 3, Tags: 7, Retries429: 1}))
	require.NoError(t, store.Count(ctx, cachepurge.Counts{Day: day, TenantID: "globex", Purges: 1, Tags: 1, Failures: 1}))
	require.NoError(t, store.DeadLetter(ctx, cachepurge.DeadLetter{JobID: cachepurge.NewJobID(), TenantID: "globex", Tags: []string{"tenant:globex"},
		EnqueuedAt: now, FailedAt: now, Attempts: 3, Error: &cachepurge.Error{Code: cachepurge.CodeMaxRetriesExceeded, Message: "429 x3"}}))

	// Without (or with a wrong) key: the spec's 401.
	for _, bearer := range []string{"", "Bearer wrong-key-123456"} {
		for _, path := range []string{"/admin/purge/health", "/admin/purge/jobs/" + id, "/admin/purge/queues/dlq"} {
			a := b.call(t, http.MethodGet, path, "", bearer)
			require.Equal(t, http.StatusUnauthorized, a.Status, path)
			require.Equal(t, map[string]any{"ok": false, "error": "unauthorized"}, a.Body, path)
		}
	}

	a := b.get(t, "/admin/purge/health")
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "healthy", a.Body["status"])
	require.Equal(t, map[string]any{"purgeTable": "ok", "purgeQueues": "ok"}, a.Body["checks"])

	a = b.get(t, "/admin/purge/jobs/"+id)
	require.Equal(t, http.StatusOK, a.Status)
	job := a.Body["job"].(map[string]any)
	require.Equal(t, "completed", job["status"])
	require.EqualValues(t, 2, job["purged"])
	a = b.get(t, "/admin/purge/jobs/pj_00000000000000000000000000000000")
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Equal(t, false, a.Body["ok"])

	a = b.get(t, "/admin/purge/queues/status")
	require.Equal(t, http.StatusOK, a.Status)
	queues := a.Body["queues"].([]any)
	require.Len(t, queues, 1)
	q := queues[0].(map[string]any)
	require.Equal(t, "cache.purge", q["topic"])
	require.EqualValues(t, 10, q["maxBatchSize"])
	require.EqualValues(t, 3, q["maxRetries"])
	require.Len(t, a.Body["tenants"], 2)
	totals := a.Body["totals"].(map[string]any)
	require.EqualValues(t, 4, totals["purges"])
	require.EqualValues(t, 1, totals["failures"])
	require.EqualValues(t, 1, a.Body["dlq"].(map[string]any)["recorded7d"])

	a = b.get(t, "/admin/purge/queues/dlq?limit=50")
	require.Equal(t, http.StatusOK, a.Status)
	dls := a.Body["deadLetters"].([]any)
	require.Len(t, dls, 1)
	require.Equal(t, "globex", dls[0].(map[string]any)["tenantId"])
	require.Equal(t, http.StatusBadRequest, b.get(t, "/admin/purge/queues/dlq?limit=0").Status)
	require.Equal(t, http.StatusNotFound, b.get(t, "/admin/purge/nope").Status)
	require.Equal(t, http.StatusMethodNotAllowed, b.call(t, http.MethodPost, "/admin/purge/health", "", "Bearer "+key).Status)
}
