package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// The events listing reads each event's rows by the key it is stored
// under: an internal producer's event under its tenant-scoped key, a
// provider's under its bare id. It looked every one up by the bare id, so
// each internal producer's event listed as "expired" (`evp events view`
// said completed).
func TestEventsListReadsEachEventByItsKey(t *testing.T) {
	t.Parallel()
	p := setup(t)
	in := wiretest.Ingest(t, p.env, wiretest.Opts{})
	raw := testkit.MustJSON(map[string]any{"id": "inq-list-1", "tenantId": "acme", "type": "inquiry.created", "source": "storefront",
		"timestamp": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339), "payload": map[string]any{"name": "Ada"}})
	res, err := in.Publish(context.Background(), []byte(raw))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	p.seed(t, "evt_list_provider", "acme", time.Now().UTC().Add(-2*time.Minute))

	evs, err := call(t, p, `{"action":"events","query":{"tenantId":"acme"}}`)
	require.NoError(t, err)
	status := map[string]any{}
	for _, e := range evs["events"].([]any) {
		m := e.(map[string]any)
		status[m["eventId"].(string)] = m["status"]
	}
	view, err := call(t, p, `{"action":"event","eventId":"inq-list-1","tenantId":"acme"}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"inq-list-1": view["status"], "evt_list_provider": "dlq"}, status,
		"each event's status as its own view derives it")
	require.NotEqual(t, "expired", view["status"])
}
