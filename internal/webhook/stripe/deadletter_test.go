package stripe_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// The stripe-eventbridge DLQ receives two shapes: the rule's copy (the
// EventBridge event) and the asynchronous invocation's failure record
// (requestPayload is the event). Both read back as the event the rule
// delivered, byte for byte in its detail; anything else is refused with a
// code saying why.
func TestReadDeadLetterReadsBothShapes(t *testing.T) {
	t.Parallel()
	detail := []byte(`{"id":"evt_dl_1","object":"event","type":"invoice.paid","created":1700000000,"data":{"object":{"id":"in_1"}}}`)
	ev, ok := stripe.PartnerEvent(detail, "aws.partner/stripe.com/ed_test", "eb-1", time.Unix(1700000000, 0))
	require.True(t, ok)
	rule, err := json.Marshal(ev)
	require.NoError(t, err)
	record, err := stripe.FailureRecord(ev, "arn:aws:lambda:us-east-1:000000000000:function:evp-prod-stripe-eventbridge", "Error", "webhook: 503 ingest_unavailable: retry later", 3, time.Now())
	require.NoError(t, err)

	for shape, body := range map[stripe.DeadLetterShape][]byte{stripe.ShapeRule: rule, stripe.ShapeFailureRecord: record} {
		dl, err := stripe.ReadDeadLetter(body)
		require.NoError(t, err, shape)
		require.Equal(t, shape, dl.Shape)
		require.Equal(t, "evt_dl_1", dl.EventID)
		require.Equal(t, "invoice.paid", dl.Type)
		require.Equal(t, ev.ID, dl.Event.ID)
		require.Equal(t, ev.Source, dl.Event.Source)
		require.Equal(t, ev.DetailType, dl.Event.DetailType)
		require.JSONEq(t, string(detail), string(dl.Event.Detail))
	}

	for name, c := range map[string]struct {
		body string
		code envelope.Code
	}{
		"not JSON":              {`evt_1 please`, stripe.CodeDeadLetterNotJSON},
		"a JSON array":          {`[1,2]`, stripe.CodeDeadLetterNotJSON},
		"another object":        {`{"hello":"world"}`, stripe.CodeDeadLetterUnknownShape},
		"a record of no object": {`{"version":"1.0","requestContext":{},"requestPayload":"x"}`, stripe.CodeDeadLetterUnknownShape},
		"another source":        {`{"version":"0","id":"x","source":"aws.partner/github.com/y","detail-type":"push","detail":{"id":"1","type":"push"}}`, stripe.CodeDeadLetterNotStripeSource},
		"no Stripe event":       {`{"version":"0","id":"x","source":"aws.partner/stripe.com/ed_1","detail-type":"invoice.paid","detail":{"object":"event"}}`, stripe.CodeDeadLetterNoStripeEvent},
		"a record of another":   {`{"version":"1.0","requestContext":{"requestId":"r"},"requestPayload":{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}}`, stripe.CodeDeadLetterNotStripeSource},
	} {
		_, err := stripe.ReadDeadLetter([]byte(c.body))
		var de *stripe.DeadLetterError
		require.True(t, errors.As(err, &de), "%s: %v", name, err)
		require.Equal(t, c.code, de.Code, name)
		require.NotEmpty(t, de.Message, name)
	}
}
