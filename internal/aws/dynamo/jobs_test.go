package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

// A finished job's idempotency key expires with it; restarting the job
// makes the key stop expiring in the same write, so a retried start with
// that key still finds the job while it runs again.
func TestAJobsKeyExpiresWithItAndRevivesWithIt(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	store := &dynamo.Jobs{Client: env.DynamoDB, Table: env.Resources.JobsTable}
	ctx := context.Background()
	keyExpiry := func() ddbtypes.AttributeValue {
		t.Helper()
		out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Resources.JobsTable), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "KEY#acme#tenant-export#k1"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "KEY"}}})
		require.NoError(t, err)
		require.NotEmpty(t, out.Item, "the key item")
		return out.Item["expiresAt"]
	}
	j := jobs.Job{ID: "job_00000000000000000000000000000001", Kind: "tenant-export", TenantID: "acme", IdempotencyKey: "k1", Args: []byte(`{}`),
		Status: jobs.StatusQueued, Generation: 1, DueAt: testkit.T0, CreatedAt: testkit.T0, UpdatedAt: testkit.T0, Version: 1}
	require.NoError(t, store.Create(ctx, j))
	require.Nil(t, keyExpiry())

	j.Version, j.Status, j.FinishedAt, j.ExpiresAt = 2, jobs.StatusCompleted, testkit.T0, testkit.T0.Add(30*24*time.Hour)
	require.NoError(t, store.Update(ctx, j))
	require.Equal(t, &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(j.ExpiresAt.Unix(), 10)}, keyExpiry())

	j.Version, j.Status, j.FinishedAt, j.ExpiresAt, j.Revived = 3, jobs.StatusQueued, time.Time{}, time.Time{}, true
	require.NoError(t, store.Update(ctx, j))
	require.Equal(t, &ddbtypes.AttributeValueMemberNULL{Value: true}, keyExpiry(), "TTL ignores a key that is not a number")
	got, ok, err := store.ByKey(ctx, "acme", "tenant-export", "k1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, jobs.StatusQueued, got.Status)

	j.Version = 3 // stale: another writer got there first
	require.ErrorIs(t, store.Update(ctx, j), jobs.ErrConflict)
}
