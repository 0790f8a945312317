package suites_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// The replay state machine's synthesized definition, run against the local
// stack's replay function over 1,050 open incidents (a dry run: it reads
// and checks every incident, sends nothing): the first execution replays
// 10 pages and hands over to a second named from the request token, which
// finishes; its summary counts all 1,050 with only the first 100 listed,
// and no execution's history comes near the quota. A refused request
// fails its execution with the refusal's code.
func TestReplayStateMachineContinuesAsNewExecutions(t *testing.T) {
	t.Parallel()
	r := startReliabilityStack(t, nil)
	ctx := context.Background()
	const n = 1050
	now := time.Now().UTC()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id := fmt.Sprintf("inq_sfn_%04d", i)
			body, err := envelope.Event{SchemaVersion: 1, ID: id, TenantID: "acme", Type: "inquiry.created", Source: "storefront",
				Timestamp: now, Payload: []byte(`{"inquiryId":"` + id + `"}`)}.Marshal()
			require.NoError(t, err)
			_, _, err = incident.Upsert(ctx, &dynamo.Recovery{Events: &dynamo.Events{Client: r.incidents.Client, Table: r.costKit.st.Resources.EventsTable}, Incidents: r.incidents}, incident.DeadLetter{
				EventKey: "acme/" + id, EventID: id, TenantID: "acme", Topic: topology.CRM, Type: "inquiry.created", Source: "storefront",
				SourceQueue: "dlq", MessageID: "m-" + id, ErrorCode: "subscriber_rejected", ErrorMessage: "422",
				Body: incident.Body{Inline: body, Size: len(body), SHA256: envelope.SHA256Hex(body)}, By: incident.ActorArchiver,
			}, now)
			require.NoError(t, err)
		})
	}
	wg.Wait()

	sum, execs := r.replayStateMachine(t, replay.Request{Topic: topology.CRM, Limit: replay.MaxBulkLimit, DryRun: true, Actor: "test"})
	t.Logf("%d executions, history %s events", len(execs), histories(execs))
	require.Len(t, execs, 2, "1,000 incidents per execution")
	require.Equal(t, n, sum.Selected)
	require.Equal(t, n, sum.ReplayedCount, "every incident would replay: %+v", sum.Skipped)
	require.Zero(t, sum.ErrorCount)
	require.Len(t, sum.Replayed, replay.MaxListed)
	require.True(t, sum.DryRun)
	require.Len(t, sum.Sample, replay.SampleSize)
	require.Contains(t, execs[1].ARN, "-part-2")
	for _, ex := range execs {
		require.Less(t, ex.History, 25000/2)
	}
	// A request the replay function refuses fails its execution with the
	// code.
	c := awslocal.NewSFNClient(awslocal.NewConfig(), r.st.URL()+devstack.StepFunctionsPath)
	start, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(devstack.ReplayStateMachineARN()), Name: aws.String("refused"), Input: aws.String(`{"limit": 5}`)})
	require.NoError(t, err)
	refused := r.waitExecution(t, c, aws.ToString(start.ExecutionArn))
	require.Equal(t, sfntypes.ExecutionStatusFailed, refused.Status)
	require.Equal(t, replay.CodeInvalidRequest, aws.ToString(refused.Error))
	require.Contains(t, aws.ToString(refused.Cause), "filter by at least one of")

	// A dry run changed nothing.
	inc, err := r.incidents.Get(ctx, incident.ID("acme/inq_sfn_0000", topology.CRM))
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
}
