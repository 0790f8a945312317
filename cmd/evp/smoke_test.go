package main

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// `evp smoke` against the local stack: a signed test event goes through
// the webhook and is followed to delivery, hop by hop; with the subscriber
// refusing it, it is followed to its incident and the command fails.
func TestSmokeFollowsATestEventToDeliveryAndToItsIncident(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	url := st.URL()

	out, err := run(t, ctx, "", "smoke", "--url", url, "--timeout", "60s")
	require.NoError(t, err, out)
	require.Regexp(t, `(?m)^smoke test of the local stack at `+regexp.QuoteMeta(url)+`: a signed Stripe test event \(invoice.paid, livemode false, tenant smoke\)$`, out)
	require.Regexp(t, `(?m)^  webhook   POST `+regexp.QuoteMeta(url)+`/webhook/stripe → HTTP 200 enqueued in \d+ ms \((evt_smoke_[0-9a-f]+); topics billing.events\)$`, out)
	require.Regexp(t, `(?m)^  ledger    stored for tenant smoke, `, out)
	require.Regexp(t, `(?m)^  billing.events delivered \(completed\) \(`, out)
	require.Regexp(t, `(?m)^smoke test passed: evt_smoke_[0-9a-f]+ delivered to every topic \(billing.events\) in `, out)
	id := regexp.MustCompile(`evt_smoke_[0-9a-f]+`).FindString(out)
	require.Eventually(t, func() bool { return delivered(st, topology.Billing, id) == 1 }, 10*time.Second, 50*time.Millisecond, "the subscriber got it")

	// The subscriber refuses (a permanent 422): followed to the incident.
	require.Equal(t, http.StatusOK, httpDo(t, http.MethodPost, url+devstack.SinkPath+"/fail?topic="+topology.Billing+"&status=422"))
	out, err = run(t, ctx, "", "smoke", "--url", url, "--timeout", "60s")
	require.ErrorIs(t, err, errSilent, out)
	id = regexp.MustCompile(`evt_smoke_[0-9a-f]+`).FindString(out)
	incID := incident.ID(id, topology.Billing)
	require.Regexp(t, `(?m)^  billing.events incident `+incID+` open: \w+: .*422`, out)
	require.Contains(t, out, "  see it:   evp dlq view "+incID+"\n")
	require.Contains(t, out, "smoke test failed: 1 of 1 topics did not deliver (billing.events)")

	// A wrong signing secret stops at the webhook, and says so.
	out, err = run(t, ctx, "", "smoke", "--url", url, "--secret", "whsec_wrong", "--timeout", "10s")
	require.ErrorIs(t, err, errSmokeFailed, out)
	require.ErrorContains(t, err, "the webhook answered 401")
	require.Contains(t, out, "→ HTTP 401")
}
