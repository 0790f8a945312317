package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func setupIncidents(t *testing.T) (*dynamo.Incidents, *awslocaltest.Env) {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	return env.Incidents(), env
}

func deadLetter(eventID, tenant, topic string) incident.DeadLetter {
	body := []byte(fmt.Sprintf(`{"id":%q,"tenantId":%q}`, eventID, tenant))
	return incident.DeadLetter{
		EventID: eventID, TenantID: tenant, Topic: topic, Type: "stripe.invoice.paid", Source: "stripe",
		SourceQueue: "arn:aws:sqs:us-east-1:000000000000:billing-events-dlq", MessageID: "m-" + eventID,
		ErrorCode: "handler_failed", ErrorMessage: "subscriber answered 500",
		Body: incident.Body{Inline: body, Size: len(body), SHA256: "x"}, By: incident.ActorArchiver,
	}
}

// A filter the index cannot narrow (topic within a tenant) costs a bounded
// number of reads per page, not one Query per matching item: each List
// makes at most ReadBudget queries per partition, returns what it found
// with a cursor, and paging still yields every match once, newest first.
func TestSparseIncidentFiltersCostBoundedReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, env := setupIncidents(t)
	var sparse []string
	for i := range 300 {
		topic := "billing.events"
		if i%100 == 7 {
			topic = "crm.sync"
		}
		dl := deadLetter(fmt.Sprintf("evt_s%03d", i), "acme", topic)
		dl.FailedAt = t0.Add(time.Duration(i) * time.Second)
		inc, _, err := incident.Upsert(ctx, env.Recovery(), dl, dl.FailedAt)
		require.NoError(t, err)
		if topic == "crm.sync" {
			sparse = append([]string{inc.ID}, sparse...) // newest first
		}
	}
	counted := &dynamo.Incidents{Client: awslocal.NewDynamoDBClient(env.Config(), env.Emulators.DynamoDBEndpoint), Table: store.Table}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 20)
		env.Calls.Reset()
		page, err := counted.List(ctx, incident.Filter{TenantID: "acme", Topic: "crm.sync", Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, env.Calls.Count("DynamoDB", "Query"), dynamo.ReadBudget, "reads per page are bounded")
		for _, inc := range page.Incidents {
			got = append(got, inc.ID)
		}
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}
	require.Equal(t, sparse, got, "every match once, newest failure first")
}
