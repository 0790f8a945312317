package devstack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// Ctrl-C is a cancelled context: Wait returns, and neither fauxqs nor
// anything it spawned outlives the stack; the same address then serves a
// fresh stack (a second `make dev` starts clean).
func TestCancelStopsEverythingAndRestartsClean(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	addr := strings.TrimPrefix(st.URL(), "http://")
	pid := st.Emulators.FauxqsPID()
	require.NoError(t, syscall.Kill(pid, 0), "fauxqs runs")

	// Leave state behind: an event in the ledger.
	raw, err := os.ReadFile("../../../events/ingest/valid/storefront-inquiry-created.json")
	require.NoError(t, err)
	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: raw})
	require.NoError(t, err)
	var res envelope.Result
	require.NoError(t, json.Unmarshal(out.Payload, &res))
	require.Equal(t, envelope.StatusEnqueued, res.Status)

	waited := make(chan error, 1)
	go func() { waited <- st.Wait(ctx) }()
	cancel()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return after cancel")
	}
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "fauxqs pid %d is gone", pid)
	require.ErrorIs(t, syscall.Kill(-pid, 0), syscall.ESRCH, "so is its process group")
	require.NoError(t, st.Close(), "Close after Wait is a no-op")

	again, err := devstack.Start(context.Background(), devstack.Options{Addr: addr, Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err, "the address is free again")
	t.Cleanup(func() { _ = again.Close() })
	out, err = awslocal.NewLambdaClient(awslocal.NewConfig(), again.URL()).Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: raw})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(out.Payload, &res))
	require.Equal(t, envelope.StatusEnqueued, res.Status, "nothing of the first run's state survives")
}

// With endpoint overrides (LocalStack, or here a separate set of emulators
// standing in for one) the stack provisions there through the SDK's
// default configuration chain, runs the functions against it, and leaves
// the resources in place on exit.
func TestEndpointOverrideUsesExternalEndpoints(t *testing.T) {
	// t.Setenv: the default configuration chain reads the process
	// environment, so this test cannot run in parallel.
	ext, err := awslocal.Start(context.Background(), awslocal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ext.Close() })
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":   ext.DynamoDBEndpoint,
		"AWS_ENDPOINT_URL_SQS":        ext.SQSEndpoint,
		"AWS_ENDPOINT_URL_SNS":        ext.SNSEndpoint,
		"AWS_ENDPOINT_URL_S3":         ext.S3Endpoint,
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_REGION":                  awslocal.Region,
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	prefix := awslocal.NewPrefix()
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Prefix: prefix, Log: logging.Discard(), Env: envconf.New()})
	require.NoError(t, err)
	require.Equal(t, devstack.TargetAWS, st.Target)
	require.Nil(t, st.Emulators, "no embedded emulators were started")

	raw, err := os.ReadFile("../../../events/ingest/valid/storefront-inquiry-created.json")
	require.NoError(t, err)
	out, err := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL()).Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: raw})
	require.NoError(t, err)
	var res envelope.Result
	require.NoError(t, json.Unmarshal(out.Payload, &res))
	require.Equal(t, envelope.StatusEnqueued, res.Status)

	resp, err := http.Get(st.URL() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, st.Close())

	// The event is in the external DynamoDB, which is still running.
	got, err := ext.DynamoDB().GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(st.Resources.EventsTable),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK("green-leaf-bakery/" + res.EventID)},
			"sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.LedgerSK},
		},
	})
	require.NoError(t, err)
	require.NotEmpty(t, got.Item, "the ledger item is in the external table")
	require.True(t, strings.HasPrefix(st.Resources.EventsTable, prefix))
}
