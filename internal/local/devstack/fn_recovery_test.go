package devstack_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestRecoveryFunctionsRunInTheLocalStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings: map[string]string{devstack.SettingSweepEvery: "200ms"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	invoke := func(name string, payload any, out any) {
		t.Helper()
		b, err := json.Marshal(payload)
		require.NoError(t, err)
		res, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(name), Payload: b})
		require.NoError(t, err)
		require.Nil(t, res.FunctionError, string(res.Payload))
		require.NoError(t, json.Unmarshal(res.Payload, out))
	}

	// The sweeper answers its schedule (and is invocable by hand).
	var rep outboxsweep.Report
	invoke(devstack.FunctionSweeper, lambdalocal.ScheduledEvent("sweeper", time.Now()), &rep)
	require.True(t, rep.Drained)

	// A dead letter on a topic's DLQ is drained by the archiver's event
	// source into an incident the replay function lists.
	q := st.Resources.Queues[topology.CRM]
	_, err = st.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String("not an envelope")})
	require.NoError(t, err)
	var page incident.Page
	require.Eventually(t, func() bool {
		invoke(devstack.FunctionReplay, map[string]any{"action": "list", "query": map[string]any{"topic": topology.CRM}}, &page)
		return len(page.Incidents) == 1
	}, 15*time.Second, 100*time.Millisecond)
	require.True(t, page.Incidents[0].Raw)
	require.Equal(t, q.DLQARN, page.Incidents[0].SourceQueue)
	require.Eventually(t, func() bool {
		visible, inflight := dlqDepth(t, st, q.DLQURL)
		return visible+inflight == 0
	}, 10*time.Second, 100*time.Millisecond, "the dead letter is acknowledged")
}

func dlqDepth(t *testing.T, st *devstack.Stack, url string) (int, int) {
	t.Helper()
	out, err := st.Clients.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
	})
	require.NoError(t, err)
	return atoi(out.Attributes["ApproximateNumberOfMessages"]), atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
