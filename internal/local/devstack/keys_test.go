package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Every path agrees on an event's storage key, for a provider's event (its
// bare id) and an internal producer's (its tenant-scoped id): ingest stores
// it there, the consumer claims that row and dead-letters with it, the
// archiver opens the incident of (key, topic), the operator views find it,
// and a replay that fails again dead-letters into the SAME incident, which
// reopens (an internal event's second dead letter was once never recorded:
// the archiver looked the incident up by the bare id, retried forever, and
// the message sat in the DLQ until its retention ended).
func TestEventKeysAgreeOnEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings: map[string]string{"CONSUMER_BACKOFF_BASE": "1s", "CONSUMER_BACKOFF_CAP": "1s"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	lam := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	call := func(fn string, in, out any) {
		t.Helper()
		payload, err := json.Marshal(in)
		require.NoError(t, err)
		res, err := lam.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload})
		require.NoError(t, err)
		require.Nil(t, res.FunctionError, string(res.Payload))
		require.NoError(t, json.Unmarshal(res.Payload, out), string(res.Payload))
	}
	events := &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}
	incidents := &dynamo.Incidents{Client: st.Clients.DynamoDB, Table: st.Resources.IncidentsTable}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
			time.Sleep(200 * time.Millisecond)
		}
	}

	for _, c := range []struct {
		name, source, typ, topic string
		payload                  map[string]any
	}{
		{"provider", "stripe", "stripe.invoice.paid", topology.Billing, map[string]any{"id": "in_keys", "object": "invoice"}},
		{"internal", "storefront", "inquiry.created", topology.CRM, map[string]any{"name": "Ada"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("evt_keys_%s_%d", c.name, time.Now().UnixNano())
			producer, ok := topology.Default().Producer(c.source)
			require.True(t, ok)
			key := ledger.Key(producer, "acme", id)
			if c.name == "internal" {
				require.Equal(t, ledger.ScopedKey("acme", id), key)
			} else {
				require.Equal(t, id, key)
			}
			st.Sink.Fail(c.topic, http.StatusUnprocessableEntity, 0)
			defer st.Sink.Recover(c.topic)

			// ingest stores it under the key.
			var res envelope.Result
			call("ingest", map[string]any{"id": id, "tenantId": "acme", "type": c.typ, "source": c.source,
				"timestamp": time.Now().UTC().Format(time.RFC3339), "payload": c.payload}, &res)
			require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, "%+v", res)
			rec, _, err := events.Load(ctx, key)
			require.NoError(t, err)
			require.Equal(t, key, rec.Key)

			// The consumer's dead letter becomes the incident of (key, topic).
			incID := incident.ID(key, c.topic)
			var inc incident.Incident
			waitFor("the incident", func() bool { inc, err = incidents.Get(ctx, incID); return err == nil })
			require.Equal(t, key, inc.Key())
			require.Equal(t, id, inc.EventID)

			// The views find the event by (tenant, id) and name its key.
			var view operator.EventView
			call("replay", map[string]any{"action": "event", "eventId": id, "tenantId": "acme"}, &view)
			require.Equal(t, key, view.EventKey)

			// Replayed while the subscriber still refuses: dead-lettered
			// again, into the same incident, which reopens.
			var out map[string]any
			call("replay", map[string]any{"action": "replay", "request": map[string]any{"incidentIds": []string{incID}, "actor": "test"}}, &out)
			waitFor("the second dead letter on the same incident", func() bool {
				inc, err = incidents.Get(ctx, incID)
				return err == nil && inc.RetryCount == 2 && inc.Status == incident.StatusOpen
			})
			waitFor("the DLQ drained", func() bool {
				out, err := st.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
					QueueUrl:       aws.String(st.Resources.Queues[c.topic].DLQURL),
					AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
				})
				require.NoError(t, err)
				return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
			})
		})
	}
}
