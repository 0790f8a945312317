package dynamo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// dispatch stores an event of tenant under key (a provider's key: its id)
// with a pending row to each topic, as ingest commits it (near the wall
// clock: the table's TTL is enforced by DynamoDB Local).
func dispatch(t *testing.T, env *awslocaltest.Env, key, tenant string, topics ...string) ledger.Record {
	t.Helper()
	ev := testkit.Event(key, "stripe.invoice.paid", "stripe", `{"customer_email":"ann@example.test"}`)
	ev.TenantID = tenant
	rec, rows := testkit.Stored(ev, topics, testkit.Recent(), outbox.StatusPending)
	require.NoError(t, env.Events().Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
	return rec
}

// eraseEvent erases an event as the subject erasure does.
func eraseEvent(t *testing.T, env *awslocaltest.Env, key string) { env.EraseEvent(t, key) }
