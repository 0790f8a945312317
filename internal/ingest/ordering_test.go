package ingest_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// stripeEnvelope is a Stripe invoice event as webhook-stripe hands it to
// ingest, padded to pad bytes of payload (above 64 KiB it is
// claim-checked).
func stripeEnvelope(t *testing.T, id, customer string, pad int) []byte {
	t.Helper()
	body, err := os.ReadFile("../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(body, &ev))
	ev["id"] = id
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	obj["customer"] = customer
	obj["description"] = strings.Repeat("x", pad)
	return []byte(testkit.MustJSON(map[string]any{
		"id": id, "tenantId": "acme", "type": "stripe.invoice.paid", "source": "stripe",
		"timestamp": "2026-12-02T11:59:00Z", "subject": obj["id"], "payload": ev,
	}))
}

// On a FIFO topic a Stripe event's group is its tenant's Stripe customer,
// not the object it is about: the key is fixed at ingest (payload inline)
// and stored with the event, so a re-drive from the ledger — its payload
// claim-checked — lands in the same group.
func TestStripeEventsGroupByCustomerOnAFIFOTopic(t *testing.T) {
	t.Parallel()
	env := fifoBillingEnv(t)
	svc := wiretest.Ingest(t, env, wiretest.Opts{})
	ctx := context.Background()
	publish := func(raw []byte) envelope.Result {
		res, err := svc.Publish(ctx, raw)
		require.NoError(t, err)
		return res
	}

	require.Equal(t, envelope.StatusEnqueued, publish(stripeEnvelope(t, "evt_ord_1", "cus_A", 0)).Status)
	// The large one's first send fails: the re-drive sends it from the
	// ledger, where its payload is only a reference.
	remove := env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage"})
	big := stripeEnvelope(t, "evt_ord_2", "cus_A", 80<<10)
	require.Equal(t, envelope.StatusAccepted, publish(big).Status)
	remove()
	require.Equal(t, envelope.StatusDuplicate, publish(big).Status, "the retry re-drives the pending topic")

	rec, _, err := env.Events().Load(ctx, "evt_ord_2")
	require.NoError(t, err)
	require.NotNil(t, rec.Event.PayloadRef, "claim-checked")
	require.Equal(t, "cus_A", rec.OrderingKey, "stored with the event")
	require.Equal(t, "in_1PzB7pLkdIwHu7ixb1Zc2R9Q", rec.Event.Subject, "the envelope subject is untouched")

	msgs := env.ReceiveAndDelete(ctx, env.Queue(topology.Billing).URL, 2, 5*time.Second)
	require.Len(t, msgs, 2)
	for _, m := range msgs {
		require.Equal(t, "acme/cus_A", m.Attributes["MessageGroupId"], aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue))
	}
}

// fifoBillingEnv is an environment whose billing.events is a FIFO topic.
func fifoBillingEnv(t *testing.T) *awslocaltest.Env {
	t.Helper()
	top := topology.Default().Clone()
	for i := range top.Topics {
		if top.Topics[i].Name == topology.Billing {
			top.Topics[i].FIFO = true
		}
	}
	return awslocaltest.NewEnv(t, awslocaltest.WithTopology(top))
}
