package jobkinds_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

// Writers after the erasure: a producer's retry of an erased event.

// Issue 32 review, item 2: a late retry of an erased event (Stripe
// retries for three days; any producer may retry) made ingest store the
// claim-checked payload again before its conditional write found the
// event stored; the object stayed until the payload lifecycle expired it.
// The duplicate path sees the erased ledger item and deletes what the
// publish stored (every version), whether the retry is a duplicate (a
// Stripe re-serialization, an internal producer's same bytes) or a
// conflict (different content under the erased event's id).
func TestALateRetryOfAnErasedEventKeepsNoPayloadObject(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.publishRawAs(t, stripeDelivery(t, "gdpr", "evt_late", "cus_A", customerEmail, 1), envelope.StatusEnqueued)
	_, raw := contact(t, "gdpr", "evt_contact", "user-42", 4*claimCheckBytes)
	b.publishRawAs(t, raw, envelope.StatusEnqueued)
	for _, subject := range []string{"cus_A", "user-42"} {
		j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(fmt.Sprintf(`{"subject":%q}`, subject))})
		require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	}
	require.Empty(t, b.env.Copies(t, customerEmail))
	require.Empty(t, b.env.Copies(t, erasedEmail))

	b.publishRawAs(t, stripeDelivery(t, "gdpr", "evt_late", "cus_A", customerEmail, 2), envelope.StatusDuplicate)
	b.publishRawAs(t, stripeDelivery(t, "gdpr", "evt_late", "cus_A", customerEmail, 1), envelope.StatusDuplicate)
	b.publishRawAs(t, raw, envelope.StatusDuplicate)
	changed := strings.Replace(string(raw), `"notes":"`, `"notes":"changed `, 1)
	b.publishRawAs(t, []byte(changed), envelope.StatusRejected)
	require.Empty(t, b.env.Copies(t, customerEmail), "the retries' payload objects, every version")
	require.Empty(t, b.env.Copies(t, erasedEmail), "the retry's and the conflicting publish's payload objects, every version")
	require.Empty(t, b.versionsUnder(t, claimcheck.Prefix("gdpr", "evt_late")))
}

// erasesEvent matches the erasure's transaction that marks an event.
func erasesEvent(in any) bool {
	tx, ok := in.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range tx.TransactItems {
		if it.Update != nil && strings.Contains(aws.ToString(it.Update.UpdateExpression), "erasedAt") && strings.Contains(aws.ToString(it.Update.UpdateExpression), "payload = ") {
			return true
		}
	}
	return false
}

// A retry that read the event before the erasure marked it stores its
// payload after the erasure deleted the event's objects and finds the
// event unmarked, so it keeps the object; the erasure's second pass
// (after the writers' window) deletes it: the ledger item no longer
// references it, so the pass deletes every payload object of the event.
func TestARetryDuringTheErasureKeepsNoPayloadObject(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, raw := contact(t, "gdpr", "evt_racing", "user-42", 4*claimCheckBytes)
	b.publishRawAs(t, raw, envelope.StatusEnqueued)
	hook := &awslocaltest.Hook{Service: "DynamoDB", Operation: "TransactWriteItems", Before: true, Match: erasesEvent,
		Do: func() { b.publishRawAs(t, raw, envelope.StatusDuplicate) }}
	b.hookedEngine(t, hook)

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.True(t, hook.Ran())
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "the retry's payload object, every version")
}
