package devstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

// The retention expiry as a stage runs it: a shortened policy set through
// the admin API starts the purge, and jobs-worker deletes an event
// accepted 40 days ago and an incident resolved 40 days ago — through
// transactions whose items IAM authorizes as dynamodb:DeleteItem on the
// events and incidents tables, which the recording shows (what `make
// iam-check` judges against jobs-worker's role; it had no DeleteItem).
func TestRetentionExpiryDeletesThroughTheLocalStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := iamcalls.NewRecorder(nil, "devstack.test")
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil), Recorder: rec})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	// An event ingest accepted 40 days ago (ingest on a clock set back).
	old := time.Now().Add(-40 * 24 * time.Hour)
	res, err := st.Environment(ctx, ingestfn.Name)
	require.NoError(t, err)
	cfg, err := ingestfn.Load(envconf.FromMap(res), st.Topology)
	require.NoError(t, err)
	svc, err := ingestfn.New(cfg, st.Clients.Data(), wire.Runtime{Now: func() time.Time { return old }})
	require.NoError(t, err)
	id := fmt.Sprintf("inq_retention_%d", time.Now().UnixNano())
	raw, err := json.Marshal(envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: "acme", Type: "inquiry.created",
		Source: "storefront", Timestamp: old.UTC(), Payload: json.RawMessage(`{"name":"Ada"}`)})
	require.NoError(t, err)
	published, err := svc.Publish(ctx, raw)
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, published.Status)
	key := "acme/" + id

	// An incident about it, resolved 40 days ago.
	incidents := &dynamo.Incidents{Client: st.Clients.DynamoDB, Table: st.Resources.IncidentsTable}
	recovery := &dynamo.Recovery{Events: &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}, Incidents: incidents}
	inc, _, err := incident.Upsert(ctx, recovery, incident.DeadLetter{
		EventKey: key, EventID: id, TenantID: "acme", Topic: topology.Audit, Type: "inquiry.created", Source: "storefront",
		SourceQueue: "dlq", MessageID: "m-" + id, ErrorCode: "subscriber_rejected", ErrorMessage: "rejected",
		Body: incident.Body{Inline: raw, Size: len(raw)}, By: incident.ActorArchiver,
	}, old)
	require.NoError(t, err)
	inc.Status, inc.ResolvedAt, inc.UpdatedAt = incident.StatusResolved, old, old
	_, err = incidents.Save(ctx, inc)
	require.NoError(t, err)

	status, body := devstacktest.AdminDo(t, st, http.MethodPut, "/admin/tenants/acme/retention", map[string]int{"eventsDays": 7, "incidentsDays": 7})
	require.Equal(t, http.StatusOK, status, body)

	events := &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}
	require.Eventually(t, func() bool {
		_, _, errEvent := events.Load(ctx, key)
		_, errIncident := incidents.Get(ctx, inc.ID)
		return errors.Is(errEvent, ledger.ErrNotFound) && errors.Is(errIncident, incident.ErrNotFound)
	}, 60*time.Second, 200*time.Millisecond, "the purge deleted the old event and the old incident")

	deletes := map[string]bool{}
	for _, c := range rec.Recording().Calls {
		if c.Function == "jobs-worker" && c.Operation == "DynamoDB.TransactWriteItems" {
			deletes[c.Action+" "+c.Resource] = true
		}
	}
	table := "arn:" + iamcalls.PartitionVar + ":dynamodb:" + iamcalls.RegionVar + ":" + iamcalls.AccountVar + ":table/" + iamcalls.StageVar
	require.True(t, deletes["dynamodb:DeleteItem "+table+"-events"], "jobs-worker's transactions delete on the events table: %v", deletes)
	require.True(t, deletes["dynamodb:DeleteItem "+table+"-incidents"], "and on the incidents table: %v", deletes)
}
