package devstack_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// What the stack provisions for its functions while it builds them (the
// alert topic, its inbox queue and subscription) is the stack's own work,
// as the CDK app's on a stage: the IAM recording holds none of it against
// a function's role (make iam-check failed on dlq-archiver's and
// subscriber-health's SNS.CreateTopic, SNS.Subscribe and SQS.CreateQueue:
// no rule, and no role of theirs would allow them).
func TestStartingTheStackRecordsNoCallOfAFunction(t *testing.T) {
	t.Parallel()
	rec := iamcalls.NewRecorder(nil, "devstack.test")
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil), Recorder: rec})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	got := rec.Recording()
	require.Empty(t, got.Unmapped, "provisioning recorded as a function's calls")
	for _, c := range got.Calls {
		require.NotContains(t, []string{"sns:CreateTopic", "sns:Subscribe", "sqs:CreateQueue"}, c.Action, "%s", c.Function)
	}
}
