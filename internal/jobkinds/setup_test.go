package jobkinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// claimCheckBytes is low so a test can store claim-checked payloads.
const claimCheckBytes = 1024

type bundle struct {
	env    *awslocaltest.Env
	ingest *ingest.Service
	engine *jobs.Engine
	clock  *testkit.Clock
	blobs  *s3blob.S3
}

// setup builds ingest (served as the "ingest" function, as
// reconciliation invokes it) and the job engine as jobs-worker builds it,
// with no queue: the test drives the steps with sweeps on its own clock.
func setup(t *testing.T, settings map[string]string) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	b := &bundle{env: env, clock: testkit.NewClock(time.Now()), blobs: &s3blob.S3{Client: env.S3}}
	s := map[string]string{wire.EnvClaimCheckBytes: fmt.Sprint(claimCheckBytes), jobsfn.EnvJobsQueueURL: ""}
	maps.Copy(s, settings)
	b.ingest = wiretest.Ingest(t, env, wiretest.Opts{Settings: s})
	fns := lambdalocal.NewFunctions()
	fns.Register(ingestfn.Name, b.ingest.Handle)
	env.ServeFunctions(fns)
	b.engine = wiretest.Jobs(t, env, wiretest.Opts{Settings: s, Now: b.clock.Now})
	return b
}

// publish ingests an internal event of tenant with a payload of about
// size bytes and returns what it sent.
func (b *bundle) publish(t *testing.T, tenant, id, subject string, size int) []byte {
	t.Helper()
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "inquiry.created", Source: "storefront",
		Subject: subject, Timestamp: time.Now().UTC(),
		Payload: json.RawMessage(fmt.Sprintf(`{"contact":%q,"notes":%q}`, subject, strings.Repeat("n", size)))}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	res, err := b.ingest.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, res)
	return raw
}

// run starts a job and sweeps (advancing the clock past any backoff)
// until it is terminal.
func (b *bundle) run(t *testing.T, p jobs.StartParams) jobs.Job {
	t.Helper()
	j, _, err := b.engine.Start(context.Background(), p)
	require.NoError(t, err)
	return b.finish(t, j.ID)
}

func (b *bundle) finish(t *testing.T, id string) jobs.Job {
	t.Helper()
	ctx := context.Background()
	for range 50 {
		_, err := b.engine.Sweep(ctx, time.Now().Add(10*time.Second))
		require.NoError(t, err)
		j, err := b.engine.Get(ctx, id)
		require.NoError(t, err)
		if j.Status.Terminal() {
			return j
		}
		b.clock.Advance(time.Minute)
	}
	t.Fatalf("job %s did not finish", id)
	return jobs.Job{}
}
