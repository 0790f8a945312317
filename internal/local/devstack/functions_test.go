package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
)

// The local stack fires what the descriptors declare, as the CDK app
// deploys it (infra/cdk TestTriggersAreTheDescriptors): every schedule
// with its input (a rate at its local setting, a daily one at its UTC
// time), every event source mapping with its batch settings, every bucket
// notification; and nothing else. make boot-check compares the stack with
// the synthesized template directly.
func TestLocalTriggersAreTheDescriptors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(),
		Env: envconf.FromMap(nil), Settings: map[string]string{devstack.SettingSweepEvery: "90s"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	top := topology.Default()

	var want, got []string
	for _, fn := range catalog.Functions(top) {
		for _, s := range fn.Schedules {
			in := ""
			if s.Input != nil {
				b, err := json.Marshal(s.Input)
				require.NoError(t, err)
				in = string(b)
			}
			want = append(want, fmt.Sprintf("%s: %s %s %s", fn.Name, s.Rule, s.Expression(), in))
		}
		for _, src := range fn.Queues {
			n := 1
			if src.Queue == wire.QueueTopicDLQs {
				n = len(top.Topics)
			}
			for range n {
				want = append(want, fmt.Sprintf("%s <- %s batch %d window %v max %d", fn.Name, src.Queue, src.BatchSize, src.BatchWindow.Seconds(), src.MaxConcurrency))
			}
		}
	}
	table, err := st.Schedules()
	require.NoError(t, err)
	for _, s := range table {
		got = append(got, fmt.Sprintf("%s: %s %s %s", s.Function, s.Rule, s.Expression, s.Input))
		if s.Rule == "outbox-sweep" {
			require.Equal(t, "1m30s", s.Every.String(), "a rate's local setting sets its local period")
		}
		if strings.HasPrefix(s.Expression, "cron(") {
			require.NotNil(t, s.Next, "%s fires daily at its time", s.Rule)
		}
	}
	out, err := st.Clients.Lambda.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{})
	require.NoError(t, err)
	kinds := map[string]string{st.Resources.JobsQueue.ARN: wire.QueueJobs, st.Resources.ImportsQueue.ARN: wire.QueueImports}
	for _, q := range st.Resources.Queues {
		kinds[q.ARN], kinds[q.DLQARN] = wire.QueueTopic, wire.QueueTopicDLQs
	}
	for _, m := range out.EventSourceMappings {
		arn := aws.ToString(m.FunctionArn)
		fn, ok := catalog.ByLocalName(top, arn[strings.LastIndex(arn, ":")+1:])
		require.True(t, ok, "%s runs a function of the catalog", arn)
		maxConc := int32(0)
		if m.ScalingConfig != nil {
			maxConc = aws.ToInt32(m.ScalingConfig.MaximumConcurrency)
		}
		got = append(got, fmt.Sprintf("%s <- %s batch %d window %v max %d", fn.Name, kinds[aws.ToString(m.EventSourceArn)],
			aws.ToInt32(m.BatchSize), float64(aws.ToInt32(m.MaximumBatchingWindowInSeconds)), maxConc))
	}
	require.ElementsMatch(t, want, got)

	nc, err := st.Clients.S3.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(st.Resources.Bucket)})
	require.NoError(t, err)
	require.Len(t, nc.QueueConfigurations, len(topology.BucketNotifications()))
	for i, n := range topology.BucketNotifications() {
		qc := nc.QueueConfigurations[i]
		require.Equal(t, st.Resources.ImportsQueue.ARN, aws.ToString(qc.QueueArn), n.Queue)
		require.Equal(t, n.Prefix, aws.ToString(qc.Filter.Key.FilterRules[0].Value))
		require.Equal(t, n.Events, []string{string(qc.Events[0])})
	}
}
