package stripeeventbridgefn_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// The function reads Stripe's tenant variables under webhook-stripe's
// names, so a stage's Stripe tenant settings reach both.
func TestItReadsStripesTenantVariables(t *testing.T) {
	t.Parallel()
	v := webhookfn.VarsOf(stripe.Declaration)
	require.Equal(t, v.TenantMap, stripeeventbridgefn.EnvTenantMap)
	require.Equal(t, v.AccountTenantsPath, stripeeventbridgefn.EnvAccountTenantsPath)
	require.Equal(t, v.AccountTenantsVersion, stripeeventbridgefn.EnvAccountTenantsVersion)
	_, err := stripeeventbridgefn.Load(envconf.FromMap(map[string]string{
		stripeeventbridgefn.EnvIngestFunction: "ingest", stripeeventbridgefn.EnvTenantMap: `{"default":"ACME"}`,
	}))
	require.ErrorContains(t, err, stripeeventbridgefn.EnvTenantMap)
}

// What EventBridge retries: an event that may succeed later (a Connect
// account not mapped yet, ingest unavailable) is returned as an error;
// one refused for good (not from Stripe's source, not a snapshot event)
// is logged with its code, counted, and not retried.
func TestRetryIntent(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	fns := lambdalocal.NewFunctions()
	fns.Register(ingestfn.Name, wiretest.Ingest(t, env, wiretest.Opts{}).Handle, lambdalocal.FunctionTimeout(ingestfn.FunctionTimeout))
	env.ServeFunctions(fns)
	build := func(ingest string, metrics *testkit.Buffer) func(context.Context, []byte, string) (stripe.Outcome, error) {
		c, err := stripeeventbridgefn.Load(envconf.FromMap(map[string]string{
			stripeeventbridgefn.EnvIngestFunction: ingest,
			stripeeventbridgefn.EnvTenantMap:      `{"default":"acme"}`,
			stripeeventbridgefn.EnvIngestTimeout:  "2s",
		}))
		require.NoError(t, err)
		h, err := stripeeventbridgefn.New(context.Background(), c, stripeeventbridgefn.Clients{Lambda: env.Lambda}, wire.Runtime{Metrics: &metric.Emitter{W: metrics}})
		require.NoError(t, err)
		return func(ctx context.Context, body []byte, source string) (stripe.Outcome, error) {
			ev, ok := stripe.PartnerEvent(body, source, "eb-1", time.Now())
			require.True(t, ok)
			return h.Handle(ctx, ev)
		}
	}
	ctx := context.Background()
	const src = "aws.partner/stripe.com/ed_test"
	metrics := &testkit.Buffer{}
	handle := build(ingestfn.Name, metrics)

	invoice, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	o, err := handle(ctx, invoice, src)
	require.NoError(t, err)
	require.Equal(t, stripe.Outcome{Status: envelope.StatusEnqueued, EventID: "evt_1PzB7sLkdIwHu7ixQm3nT0aX"}, o)
	rec, _, err := env.Events().Load(ctx, "evt_1PzB7sLkdIwHu7ixQm3nT0aX")
	require.NoError(t, err)
	require.Equal(t, "stripe.invoice.paid", rec.Event.Type)
	o, err = handle(ctx, invoice, src)
	require.NoError(t, err, "a duplicate is delivered")
	require.Equal(t, stripe.Outcome{Status: envelope.StatusDuplicate, EventID: "evt_1PzB7sLkdIwHu7ixQm3nT0aX"}, o, "and answered as one")

	// A Connect event from an unmapped account: retried (an operator maps
	// it meanwhile, or it reaches the DLQ).
	checkout, err := os.ReadFile("../../../events/stripe/checkout.session.completed.json")
	require.NoError(t, err)
	_, err = handle(ctx, checkout, src)
	require.Error(t, err)
	require.Contains(t, err.Error(), "unknown_account")

	// Refused for good: not retried, counted with the code.
	thin := []byte(`{"id":"evt_thin","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","created":"2024-09-17T06:20:52.246Z"}`)
	o, err = handle(ctx, thin, src)
	require.NoError(t, err)
	require.Equal(t, stripe.OutcomeRefused, o.Status, "its answer says so (evp stripe redrive-eventbridge reports it)")
	require.Equal(t, webhook.CodeInvalidEvent, o.Code)
	o, err = handle(ctx, invoice, "aws.partner/github.com/x")
	require.NoError(t, err, "not Stripe's source: refused, not retried")
	require.Equal(t, stripe.Outcome{Status: stripe.OutcomeRefused, Code: webhook.CodeInvalidEvent, Message: "not an event of Stripe's partner event source"}, o)
	require.Contains(t, metrics.String(), `"Code":"invalid_event"`)
	require.Contains(t, metrics.String(), `"Code":"unknown_account"`)

	// Ingest unreachable: retried.
	missing := build("no-such-ingest", &testkit.Buffer{})
	body, err := json.Marshal(map[string]any{"id": "evt_new_1", "object": "event", "type": "invoice.paid", "created": 1700000000, "data": map[string]any{"object": map[string]any{"id": "in_1"}}})
	require.NoError(t, err)
	_, err = missing(ctx, body, src)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "ingest_"), err.Error())
}
