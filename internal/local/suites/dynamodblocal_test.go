package suites_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// The local stack on AWS's DynamoDB Local (what `make dev` runs where Java
// is installed): a Stripe event is delivered, an internal event reaches
// both its topics, a duplicate is acknowledged, and a durable job
// completes — the same paths as on the embedded emulator.
func TestStackOnDynamoDBLocal(t *testing.T) {
	t.Parallel()
	if _, _, err := awslocal.FindDynamoDBLocal(); err != nil {
		if os.Getenv(awslocaltest.EnvRequireDynamoDBLocal) != "" {
			t.Fatal(err)
		}
		t.Skipf("SKIPPED on DynamoDB Local: %v", err)
	}
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		DynamoDB: awslocal.DynamoLocal,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Equal(t, awslocal.DynamoLocal, st.Emulators.DynamoKind)
	require.Nil(t, st.Emulators.Dynamo, "no embedded emulator")

	k := &costKit{t: t, st: st, lambda: awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())}
	k.postStripe(k.stripeEvent("evt_ddblocal_1"))
	k.waitFor("delivered", func() bool { return k.delivered(topology.Billing, "evt_ddblocal_1") })

	k.invoke("ingest", inquiry("inq_ddblocal_1"))
	k.waitFor("both topics", func() bool {
		return k.delivered(topology.Notifications, "inq_ddblocal_1") && k.delivered(topology.CRM, "inq_ddblocal_1")
	})
	var res map[string]any
	require.NoError(t, json.Unmarshal(k.invoke("ingest", inquiry("inq_ddblocal_1")), &res))
	require.Equal(t, "duplicate_acknowledged", res["status"])

	var started struct {
		Job struct {
			ID string `json:"jobId"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal(k.invoke(devstack.FunctionReplay, map[string]any{"action": "jobs.start", "kind": "tenant-export", "tenantId": "acme"}), &started))
	var job map[string]any
	k.waitFor("the export completes", func() bool {
		require.NoError(t, json.Unmarshal(k.invoke(devstack.FunctionReplay, map[string]any{"action": "jobs.get", "jobId": started.Job.ID}), &job))
		return job["status"] == "completed"
	})
	require.EqualValues(t, 2, job["result"].(map[string]any)["events"], "acme's Stripe invoice and its inquiry")
}
