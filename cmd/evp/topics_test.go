package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

// evp topics lists every topic's health, pauses one (its event source
// mapping is disabled at once: evp tells the subscriber-health function)
// and resumes it; resuming a topic that is not paused is refused with its
// code.
func TestTopicsListPauseResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := startStack(t)
	out, err := run(t, ctx, "", "topics", "list", "--url", st.URL())
	require.NoError(t, err)
	require.Contains(t, out, "TOPIC")
	for _, tp := range st.Topology.Topics {
		require.Regexp(t, `(?m)^`+strings.ReplaceAll(tp.Name, ".", `\.`)+`\s+closed`, out)
	}

	out, err = run(t, ctx, "", "topics", "pause", topology.CRM, "--reason", "migration", "--actor", "ops", "--url", st.URL())
	require.NoError(t, err)
	require.Equal(t, "crm.sync paused (paused by ops: migration); applied now\n", out)
	lc := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	fn := consumerfn.FunctionName(topology.Topic{Name: topology.CRM, Consumer: topology.ConsumerHTTP})
	require.Eventually(t, func() bool {
		m, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(fn)})
		require.NoError(t, err)
		return aws.ToString(m.EventSourceMappings[0].State) == "Disabled"
	}, 10*time.Second, 50*time.Millisecond)
	out, err = run(t, ctx, "", "topics", "list", "--url", st.URL())
	require.NoError(t, err)
	require.Regexp(t, `(?m)^crm\.sync\s+paused\s+\S+\s+-\s+paused by ops: migration`, out)

	_, err = run(t, ctx, "", "topics", "resume", topology.Billing, "--url", st.URL())
	require.ErrorContains(t, err, "not_paused")
	out, err = run(t, ctx, "", "topics", "resume", topology.CRM, "--url", st.URL())
	require.NoError(t, err)
	require.Contains(t, out, "crm.sync closed (resumed by evp)")
}
