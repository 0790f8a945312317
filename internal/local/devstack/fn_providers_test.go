package devstack_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/github"
	"github.com/siteswarm/eventplatform/internal/webhook/shopify"
	"github.com/siteswarm/eventplatform/internal/webhook/standard"
)

// The local secrets the issue fixes for `make dev` (a sender outside the
// project signs with them): GITHUB_WEBHOOK_SECRET, SHOPIFY_WEBHOOK_SECRET,
// STANDARD_WEBHOOK_SECRET for the source "local".
const (
	localGitHubSecret   = "local-github-webhook-secret"
	localShopifySecret  = "local-shopify-client-secret"
	localStandardSecret = "whsec_bG9jYWwtc3RhbmRhcmQtd2ViaG9va3Mtc2VjcmV0IQ=="
)

// TestProvidersThroughTheLocalStack posts GitHub, Shopify and Standard
// Webhooks deliveries to a fresh local stack, each signed by an
// implementation written apart from the providers' (HMAC-SHA256 as each
// documents it; the standard-webhooks reference library as the Standard
// Webhooks sender, in both header spellings), with the local secrets: each
// is accepted for tenant acme, stored under its provider's type and
// delivered to integrations.events once; a redelivery is a duplicate and
// delivered no second time; the refusals each provider documents are
// answered before ingest.
func TestProvidersThroughTheLocalStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	events := &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}

	post := func(path string, body []byte, headers map[string]string) (int, envelope.Result, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.URL()+path, bytes.NewReader(body))
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var res envelope.Result
		require.NoError(t, json.Unmarshal(raw, &res), string(raw))
		return resp.StatusCode, res, string(raw)
	}
	delivered := func(id string) int {
		n := 0
		for _, d := range st.Sink.Deliveries(topology.Integrations) {
			if d.Headers["webhook-id"] == id || d.Headers["Webhook-Id"] == id || d.EventID == id {
				n++
			}
		}
		return n
	}
	// accepted: the delivery is enqueued on integrations.events, stored
	// for acme under typ, delivered once; its redelivery is a duplicate,
	// still delivered once.
	accepted := func(path string, body []byte, headers map[string]string, typ string) string {
		t.Helper()
		status, res, raw := post(path, body, headers)
		require.Equal(t, http.StatusOK, status, raw)
		require.Equal(t, envelope.StatusEnqueued, res.Status, raw)
		require.Equal(t, []string{topology.Integrations}, res.Topics)
		rec, _, err := events.Load(ctx, res.EventID)
		if errors.Is(err, ledger.ErrNotFound) { // ids scoped by tenant (not GlobalIDs)
			rec, _, err = events.Load(ctx, ledger.ScopedKey("acme", res.EventID))
		}
		require.NoError(t, err)
		require.Equal(t, "acme", rec.Event.TenantID)
		require.Equal(t, typ, rec.Event.Type)
		require.Eventually(t, func() bool { return delivered(res.EventID) == 1 }, 20*time.Second, 50*time.Millisecond, "%s delivered to the subscriber", res.EventID)

		status, dup, raw := post(path, body, headers)
		require.Equal(t, http.StatusOK, status, raw)
		require.Equal(t, envelope.StatusDuplicate, dup.Status, raw)
		require.Equal(t, res.EventID, dup.EventID)
		time.Sleep(500 * time.Millisecond)
		require.Equal(t, 1, delivered(res.EventID), "a redelivery is not delivered again")
		return res.EventID
	}

	t.Run("github", func(t *testing.T) {
		body := sample(t, "github", "issues.opened")
		hubSign := func(secret string, b []byte) string {
			m := hmac.New(sha256.New, []byte(secret))
			m.Write(b)
			return "sha256=" + hex.EncodeToString(m.Sum(nil))
		}
		delivery := uuid.NewString()
		headers := map[string]string{
			"Content-Type": "application/json", github.EventHeader: "issues", github.DeliveryHeader: delivery,
			github.HookHeader: "1", github.SignatureHeader: hubSign(localGitHubSecret, body),
		}
		id := accepted("/webhook/github", body, headers, "github.issues.opened")
		require.Contains(t, id, delivery, "the event is GitHub's delivery")

		ping := sample(t, "github", "ping")
		status, res, raw := post("/webhook/github", ping, map[string]string{
			"Content-Type": "application/json", github.EventHeader: "ping", github.DeliveryHeader: uuid.NewString(),
			github.HookHeader: "1", github.SignatureHeader: hubSign(localGitHubSecret, ping),
		})
		require.Equal(t, http.StatusOK, status, raw)
		require.Equal(t, "acknowledged", string(res.Status), raw)

		form := []byte("payload=" + string(body))
		status, res, raw = post("/webhook/github", form, map[string]string{
			"Content-Type": "application/x-www-form-urlencoded", github.EventHeader: "issues", github.DeliveryHeader: uuid.NewString(),
			github.HookHeader: "1", github.SignatureHeader: hubSign(localGitHubSecret, form),
		})
		require.Equal(t, http.StatusUnsupportedMediaType, status, raw)
		require.Equal(t, "unsupported_media_type", string(res.Error.Code))

		headers[github.DeliveryHeader] = uuid.NewString()
		headers[github.SignatureHeader] = hubSign("another-secret", body)
		status, _, raw = post("/webhook/github", body, headers)
		require.Equal(t, http.StatusUnauthorized, status, raw)
	})

	t.Run("shopify", func(t *testing.T) {
		body := sample(t, "shopify", "orders.create")
		shopSign := func(secret string, b []byte) string {
			m := hmac.New(sha256.New, []byte(secret))
			m.Write(b)
			return base64.StdEncoding.EncodeToString(m.Sum(nil))
		}
		triggered := time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)
		headers := map[string]string{
			"Content-Type": "application/json", shopify.TopicHeader: "orders/create", shopify.ShopHeader: "acme.myshopify.com",
			shopify.WebhookIDHeader: uuid.NewString(), shopify.TriggeredAtHeader: triggered.Format(time.RFC3339Nano),
			shopify.SignatureHeader: shopSign(localShopifySecret, body),
		}
		id := accepted("/webhook/shopify", body, headers, "shopify.orders.create")
		rec, _, err := events.Load(ctx, id)
		require.NoError(t, err)
		require.True(t, triggered.Equal(rec.Event.Timestamp), "X-Shopify-Triggered-At is the event's time (%s, got %s)", triggered, rec.Event.Timestamp)

		headers[shopify.WebhookIDHeader] = uuid.NewString()
		headers[shopify.SignatureHeader] = shopSign("another-secret", body)
		status, res, raw := post("/webhook/shopify", body, headers)
		require.Equal(t, http.StatusUnauthorized, status, raw, "Shopify's compliance topics require a 401 on a bad HMAC")
		require.NotNil(t, res.Error)
	})

	t.Run("standard", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(localStandardSecret)
		require.NoError(t, err)
		signed := func(body []byte, id string, at time.Time, prefix string) map[string]string {
			sig, err := wh.Sign(id, at, body)
			require.NoError(t, err)
			return map[string]string{
				"Content-Type": "application/json", prefix + "-id": id,
				prefix + "-timestamp": strconv.FormatInt(at.Unix(), 10), prefix + "-signature": sig,
			}
		}
		body := sample(t, "standard", "contact.created")
		id := "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		accepted("/webhook/standard/local", body, signed(body, id, time.Now(), "webhook"), "standard.local.contact.created")

		// Svix-based senders spell the headers svix-*.
		failed := sample(t, "standard", "invoice.payment_failed")
		accepted("/webhook/standard/local", failed, signed(failed, "msg_svix"+strconv.FormatInt(time.Now().UnixNano(), 36), time.Now(), "svix"), "standard.local.invoice.payment_failed")

		for name, at := range map[string]time.Time{"stale": time.Now().Add(-standard.Tolerance - time.Minute), "future": time.Now().Add(standard.Tolerance + time.Minute)} {
			status, _, raw := post("/webhook/standard/local", body, signed(body, "msg_"+name, at, "webhook"))
			require.Equal(t, http.StatusUnauthorized, status, "%s: %s", name, raw)
		}
		status, res, raw := post("/webhook/standard/crm", body, signed(body, "msg_unknown_source", time.Now(), "webhook"))
		require.Equal(t, http.StatusNotFound, status, raw, "a source the stack does not configure")
		require.Equal(t, "unknown_source", string(res.Error.Code))
	})
}

func sample(t *testing.T, provider, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../../events/" + provider + "/" + name + ".json")
	require.NoError(t, err)
	return b
}

// signedLocally are the headers of a delivery of body signed the
// provider's way (its declaration's Sign) with its local secret, from its
// local account: for tests about what is refused after verification.
func signedLocally(d webhook.Declaration, body []byte) map[string]string {
	return d.Sign(webhook.Signing{Body: body, Event: "orders.create", ID: "bad-input-1", Account: d.Local.Account, Secret: d.Local.Secret, At: time.Now()})
}
