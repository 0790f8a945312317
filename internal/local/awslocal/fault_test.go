package awslocal_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// attempts counts HTTP attempts (the Deserialize step runs once per retry
// attempt), to show injected faults never reach the wire or the retryer.
type attempts struct{ n atomic.Int32 }

func (a *attempts) option(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("test.attempts",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			a.n.Add(1)
			return next.HandleDeserialize(ctx, in)
		}), middleware.Before)
}

func TestFaultsTimesAndResource(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	notify := env.Queue(topology.Notifications) // a standard queue: plain sends
	crm := env.Queue(topology.CRM)
	var wire attempts
	client := sqs.NewFromConfig(env.Config(), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(env.Emulators.SQSEndpoint)
		o.APIOptions = append(o.APIOptions, wire.option)
	})
	send := func(url string) error {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")})
		return err
	}

	env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: notify.URL, Times: 2})
	require.NoError(t, send(crm.URL), "other queues are unaffected")
	require.Equal(t, int32(1), wire.n.Load())
	for range 2 {
		err := send(notify.URL)
		requireAPIError(t, err, "InternalError")
	}
	require.Equal(t, int32(1), wire.n.Load(), "injected before the retryer: nothing went on the wire")
	require.NoError(t, send(notify.URL), "the fault retired after 2")
	require.Equal(t, 2, env.Faults.Injected("SendMessage"))
	require.Equal(t, 2, env.Faults.Injected("SQS.SendMessage"))
	require.Zero(t, env.Faults.Injected("DynamoDB.SendMessage"))
	require.Equal(t, 4, env.Calls.Count("SQS", "SendMessage"), "faulted calls are still calls")

	// A queue may also be named by its queue name; removal is immediate.
	remove := env.Faults.Add(awslocal.Fault{Service: "SQS", Resource: topology.Default().Topics[2].QueueName(env.Prefix)})
	require.Error(t, send(crm.URL))
	require.Error(t, send(crm.URL), "Times 0: every call until removed")
	require.NoError(t, send(notify.URL))
	remove()
	remove()
	require.NoError(t, send(crm.URL))
}

func TestFaultsDynamoErrors(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(topology.Topology{}))
	ctx := context.Background()
	events, purge := aws.String(env.Resources.EventsTable), aws.String(env.Resources.PurgeTable)
	tx := func(tbl *string, sk string) error {
		_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: purge, Item: key("P", sk)}},
			{Put: &ddbtypes.Put{TableName: tbl, Item: key("E", sk)}},
		}})
		return err
	}

	env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems", Resource: table.Events.PhysicalName(env.Prefix),
		Times: 1, Err: awslocal.TransactionConflict(2, 1)})
	require.NoError(t, tx(purge, "1"), "a transaction not touching the table passes")
	err := tx(events, "2")
	var tce *ddbtypes.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Equal(t, []string{"None", "TransactionConflict"}, []string{aws.ToString(tce.CancellationReasons[0].Code), aws.ToString(tce.CancellationReasons[1].Code)})
	require.NoError(t, tx(events, "3"))

	// Batch writes match on RequestItems; the default error is DynamoDB's
	// own InternalServerError.
	remove := env.Faults.Add(awslocal.Fault{Operation: "BatchWriteItem", Resource: *events})
	_, err = env.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{
		*events: {{PutRequest: &ddbtypes.PutRequest{Item: key("B", "1")}}},
	}})
	var ise *ddbtypes.InternalServerError
	require.ErrorAs(t, err, &ise)
	remove()

	remove = env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "PutItem", Err: awslocal.Throttled()})
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: events, Item: key("T", "1")})
	var pte *ddbtypes.ProvisionedThroughputExceededException
	require.ErrorAs(t, err, &pte)
	remove()

	remove = env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "GetItem", Err: awslocal.ServiceUnavailable()})
	_, err = env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: events, Key: key("T", "1")})
	requireAPIError(t, err, "ServiceUnavailable")
	remove()
}

func TestFaultsProbabilityConcurrent(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(topology.Topology{}))
	ctx := context.Background()
	env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "DescribeTable", Probability: 0.5})

	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if _, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.Resources.PurgeTable)}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	n := env.Faults.Injected("DescribeTable")
	require.Equal(t, int(failed.Load()), n)
	require.Greater(t, n, 40)
	require.Less(t, n, 160)
	require.Equal(t, 200, env.Calls.Count("DynamoDB", "DescribeTable"))
}

func TestCallsCounting(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("calls.test", 5, false)))
	ctx := context.Background()
	require.Zero(t, env.Calls.Total(), "provisioning is not counted")

	tbl := aws.String(env.Resources.EventsTable)
	for _, sk := range []string{"a", "b"} {
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: key("C", sk)})
		require.NoError(t, err)
	}
	_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: key("C", "c")}},
	}})
	require.NoError(t, err)
	_, err = env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(env.Queue("calls.test").URL), MessageBody: aws.String("x")})
	require.NoError(t, err)

	require.Equal(t, 2, env.Calls.Count("DynamoDB", "PutItem"))
	require.Equal(t, 1, env.Calls.Count("DynamoDB", "TransactWriteItems"))
	require.Equal(t, 4, env.Calls.Total())
	require.Equal(t, map[string]int{"DynamoDB.PutItem": 2, "DynamoDB.TransactWriteItems": 1, "SQS.SendMessage": 1}, env.Calls.Snapshot())

	// Any client built from the Env's config is counted too.
	other := awslocal.NewDynamoDBClient(env.Config(), env.Emulators.DynamoDBEndpoint)
	_, err = other.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("C", "a")})
	require.NoError(t, err)
	require.Equal(t, 1, env.Calls.Count("DynamoDB", "GetItem"))

	env.Calls.Reset()
	require.Zero(t, env.Calls.Total())
	require.Empty(t, env.Calls.Snapshot())
}
