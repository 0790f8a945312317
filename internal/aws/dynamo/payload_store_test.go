package dynamo_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/operator"
)

// TestLedgerPayloadFormatsOnTheTable: through the emulator (either
// DynamoDB: EVP_DYNAMODB), a Stripe event committed now (zstd with the
// Stripe dictionary, derived attributes left out) and a ledger item
// written in the gzip format before it both read back whole, by Load and
// by the tenant listing.
func TestLedgerPayloadFormatsOnTheTable(t *testing.T) {
	t.Parallel()
	tb := setupTables(t)
	ctx := context.Background()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	invoice, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	rec := ledger.Record{
		Key: ledger.ScopedKey("acme", "evt_zstd"),
		Event: envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: "evt_zstd", TenantID: "acme", Type: "stripe.invoice.paid",
			Source: "stripe", Timestamp: created, Payload: json.RawMessage(invoice)},
		Topics: []string{"billing.events"}, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: created, ExpiresAt: created.Add(ledger.DefaultRetention),
	}
	require.NoError(t, tb.events.Commit(ctx, ingest.CommitParams{Record: rec}))

	raw, err := tb.env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tb.events.Table),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(rec.Key)}, "sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.LedgerSK}}})
	require.NoError(t, err)
	require.Contains(t, raw.Item, "payloadZ", "stored compressed")
	require.NotContains(t, raw.Item, "payload")
	require.NotContains(t, raw.Item, "createdAt", "derived from tenantSk")

	got, _, err := tb.events.Load(ctx, rec.Key)
	require.NoError(t, err)
	require.JSONEq(t, string(invoice), string(got.Event.Payload))
	require.Equal(t, "evt_zstd", got.Event.ID)
	require.Equal(t, ledger.StatusReceived, got.Status)
	require.True(t, created.Equal(got.CreatedAt))

	// An item as the gzip format wrote it (every attribute present).
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(invoice)
	require.NoError(t, w.Close())
	old, err := attributevalue.MarshalMap(map[string]any{
		"pk": dynamo.EventPK("acme/evt_gzip"), "sk": dynamo.LedgerSK, "eventId": "evt_gzip", "tenantId": "acme",
		"tenantSk": "2026-12-01T09:00:00.000Z#evt_gzip", "type": "stripe.invoice.paid", "source": "stripe",
		"timestamp": "2026-12-01T09:00:00Z", "payloadGz": gz.Bytes(), "topics": []string{"billing.events"},
		"payloadHash": "h", "status": ledger.StatusReceived, "createdAt": "2026-12-01T09:00:00.000Z", "expiresAt": created.Add(ledger.DefaultRetention).Unix(),
	})
	require.NoError(t, err)
	_, err = tb.env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb.events.Table), Item: old})
	require.NoError(t, err)
	got, _, err = tb.events.Load(ctx, "acme/evt_gzip")
	require.NoError(t, err)
	require.JSONEq(t, string(invoice), string(got.Event.Payload))

	list, _, err := tb.events.ListTenant(ctx, operator.TenantQuery{TenantID: "acme", Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "evt_zstd", list[0].Event.ID, "newest first")
	require.True(t, created.Equal(list[0].CreatedAt))
	require.Equal(t, ledger.StatusReceived, list[0].Status)
	require.Equal(t, "evt_gzip", list[1].Event.ID)
}
