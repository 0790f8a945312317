package lambdalocal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

type ingestReq struct {
	ID string `json:"id"`
}

type ingestResp struct {
	ID        string `json:"id"`
	RequestID string `json:"requestId"`
	ARN       string `json:"arn"`
	Deadline  bool   `json:"deadline"`
}

func newInvokeClient(t *testing.T, fns *lambdalocal.Functions) *lambda.Client {
	t.Helper()
	srv := httptest.NewServer(fns)
	t.Cleanup(srv.Close)
	return awslocal.NewLambdaClient(awslocal.NewConfig(), srv.URL)
}

func echo(ctx context.Context, in ingestReq) (ingestResp, error) {
	lc, _ := lambdacontext.FromContext(ctx)
	_, hasDeadline := ctx.Deadline()
	if in.ID == "fail" {
		return ingestResp{}, errors.New("boom")
	}
	return ingestResp{ID: in.ID, RequestID: lc.AwsRequestID, ARN: lc.InvokedFunctionArn, Deadline: hasDeadline}, nil
}

func TestInvokeRequestResponse(t *testing.T) {
	t.Parallel()
	fns := lambdalocal.NewFunctions()
	fns.Register("ingest", echo)
	client := newInvokeClient(t, fns)
	ctx := context.Background()

	for _, name := range []string{
		"ingest",
		"arn:aws:lambda:us-east-1:000000000000:function:ingest",
		"arn:aws:lambda:us-east-1:000000000000:function:ingest:live",
		"000000000000:function:ingest",
	} {
		out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(`{"id":"e1"}`)})
		require.NoError(t, err, name)
		require.Equal(t, int32(200), out.StatusCode)
		require.Nil(t, out.FunctionError)
		require.Equal(t, "$LATEST", aws.ToString(out.ExecutedVersion))
		var resp ingestResp
		require.NoError(t, json.Unmarshal(out.Payload, &resp))
		require.Equal(t, "e1", resp.ID)
		require.Len(t, resp.RequestID, 36, "a uuid")
		require.True(t, resp.Deadline)
		require.True(t, strings.HasPrefix(resp.ARN, awslocal.FunctionARN("ingest")), resp.ARN)
		if strings.HasSuffix(name, ":live") {
			require.Equal(t, awslocal.FunctionARN("ingest")+":live", resp.ARN)
		}
	}

	// A handler error is a 200 with X-Amz-Function-Error, like Lambda.
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: []byte(`{"id":"fail"}`)})
	require.NoError(t, err)
	require.Equal(t, "Unhandled", aws.ToString(out.FunctionError))
	var fe struct{ ErrorMessage, ErrorType string }
	require.NoError(t, json.Unmarshal(out.Payload, &fe))
	require.Equal(t, "boom", fe.ErrorMessage)
	require.Equal(t, "errorString", fe.ErrorType)

	// DryRun only checks the function exists.
	out, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), InvocationType: lambdatypes.InvocationTypeDryRun})
	require.NoError(t, err)
	require.Equal(t, int32(204), out.StatusCode)
}

func TestInvokeErrors(t *testing.T) {
	t.Parallel()
	fns := lambdalocal.NewFunctions()
	fns.Register("ingest", echo)
	fns.Register("slow", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}, lambdalocal.FunctionTimeout(100*time.Millisecond))
	fns.Register("panics", func(context.Context) error { panic("kaboom") })
	client := newInvokeClient(t, fns)
	ctx := context.Background()

	_, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("nope"), Payload: []byte(`{}`)})
	var rnf *lambdatypes.ResourceNotFoundException
	require.ErrorAs(t, err, &rnf)
	require.Contains(t, aws.ToString(rnf.Message), "Function not found: arn:aws:lambda:us-east-1:000000000000:function:nope")

	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: bytes.Repeat([]byte(" "), lambdalocal.MaxInvokePayload+1)})
	var tooLarge *lambdatypes.RequestTooLargeException
	require.ErrorAs(t, err, &tooLarge)

	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: []byte(`{not json`)})
	var badJSON *lambdatypes.InvalidRequestContentException
	require.ErrorAs(t, err, &badJSON)

	start := time.Now()
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("slow")})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, "Unhandled", aws.ToString(out.FunctionError))
	require.Contains(t, string(out.Payload), "Task timed out after 0.10 seconds")

	out, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("panics")})
	require.NoError(t, err)
	require.Equal(t, "Unhandled", aws.ToString(out.FunctionError))
	require.Contains(t, string(out.Payload), "kaboom")
}

func TestInvokeEvent(t *testing.T) {
	t.Parallel()
	fns := lambdalocal.NewFunctions()
	var ran atomic.Int32
	release := make(chan struct{})
	var sawDeadline atomic.Bool
	fns.Register("async", func(ctx context.Context, in ingestReq) error {
		<-release
		_, ok := ctx.Deadline()
		sawDeadline.Store(ok)
		ran.Add(1)
		if in.ID == "fail" {
			return errors.New("async boom")
		}
		return nil
	})
	failed := make(chan error, 1)
	fns.OnEventError(func(name string, err error) { failed <- err })
	client := newInvokeClient(t, fns)
	ctx := context.Background()

	// Event returns 202 at once, before the handler finishes.
	out, err := client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String("async"), InvocationType: lambdatypes.InvocationTypeEvent, Payload: []byte(`{"id":"e1"}`),
	})
	require.NoError(t, err)
	require.Equal(t, int32(202), out.StatusCode)
	require.Zero(t, ran.Load())

	_, err = client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String("async"), InvocationType: lambdatypes.InvocationTypeEvent, Payload: []byte(`{"id":"fail"}`),
	})
	require.NoError(t, err)
	close(release)
	fns.Wait()
	require.Equal(t, int32(2), ran.Load())
	require.True(t, sawDeadline.Load())
	require.ErrorContains(t, <-failed, "async boom")
}

func TestEnvServeFunctionsCountsAndFaults(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("invoke.test", 5, false)))
	fns := lambdalocal.NewFunctions()
	fns.Register("ingest", echo)
	client := env.ServeFunctions(fns)
	ctx := context.Background()

	remove := env.Faults.Add(awslocal.Fault{Service: "Lambda", Operation: "Invoke", Resource: "ingest", Times: 1, Err: awslocal.Throttled()})
	defer remove()
	_, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(awslocal.FunctionARN("ingest")), Payload: []byte(`{"id":"x"}`)})
	var throttled *lambdatypes.TooManyRequestsException
	require.ErrorAs(t, err, &throttled)
	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: []byte(`{"id":"x"}`)})
	require.NoError(t, err)
	require.Equal(t, 2, env.Calls.Count("Lambda", "Invoke"))
	require.Equal(t, 1, env.Faults.Injected("Invoke"))
}
