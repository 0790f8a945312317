package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// BenchmarkWebhookRoundTrip is one Stripe delivery end to end, minus API
// Gateway: the handler verifies and canonicalizes a signed invoice.paid
// (the 5 KB sample, a fresh event id per delivery), invokes ingest with the
// real SDK Lambda client through the local Lambda Invoke endpoint, and
// ingest commits to DynamoDB and sends to billing.events. "redelivery"
// posts the same event every time (Stripe's retries): the duplicate path.
//
// p50-ms/p99-ms are the handler's; ingest-p50-ms is ingest.Service.Publish called
// in-process for the same event on the same emulators, so
// adapter-overhead-ms = p50-ms - ingest-p50-ms is what the webhook adds
// (verification, canonicalization, the Invoke round trip and its JSON).
// aws-calls/delivery counts every AWS API call of a delivery, the Lambda
// Invoke included.
func BenchmarkWebhookRoundTrip(b *testing.B) {
	for _, redelivery := range []bool{false, true} {
		name := "first-delivery"
		if redelivery {
			name = "redelivery"
		}
		b.Run(name, func(b *testing.B) {
			bd := setup(b)
			ctx := context.Background()
			base := string(sample(b, "invoice.paid.json"))
			const sampleID = "evt_1PzB7sLkdIwHu7ixQm3nT0aX"
			body := func(id string) []byte { return []byte(strings.Replace(base, sampleID, id, 1)) }
			if redelivery {
				if resp, err := bd.h.Handle(ctx, signed(body("evt_redelivered"))); err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("first delivery: %v %+v", err, resp)
				}
			}
			var handler, direct []time.Duration
			calls := 0
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("evt_bench_%d", i)
				if redelivery {
					id = "evt_redelivered"
				}
				req := signed(body(id))
				bd.env.Calls.Reset()
				start := time.Now()
				resp, err := bd.h.Handle(ctx, req)
				handler = append(handler, time.Since(start))
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("delivery: %v %d %s", err, resp.StatusCode, resp.Body)
				}
				calls += bd.env.Calls.Total()

				b.StopTimer()
				if !redelivery {
					bd.cleanup(b, id)
				}
				direct = append(direct, bd.publishDirect(b, body(fmt.Sprintf("evt_direct_%d", i)), redelivery))
				b.StartTimer()
			}
			b.ReportMetric(float64(calls)/float64(len(handler)), "aws-calls/delivery")
			b.ReportMetric(ms(pct(handler, 50)), "p50-ms")
			b.ReportMetric(ms(pct(handler, 99)), "p99-ms")
			b.ReportMetric(ms(pct(direct, 50)), "ingest-p50-ms")
			b.ReportMetric(ms(pct(handler, 50)-pct(direct, 50)), "adapter-overhead-ms")
		})
	}
}

// publishDirect canonicalizes body as the handler would and times
// ingest.Service.Publish in-process on the same emulators.
func (bd *bundle) publishDirect(b *testing.B, body []byte, redelivery bool) time.Duration {
	ctx := context.Background()
	d := webhook.Delivery{Body: body}
	ev, err := bd.provider.Canonicalize(ctx, d)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := webhook.Encode(ev)
	if err != nil {
		b.Fatal(err)
	}
	if redelivery {
		if _, err := bd.svc.Publish(ctx, raw); err != nil { // first sight, untimed
			b.Fatal(err)
		}
	}
	start := time.Now()
	res, err := bd.svc.Publish(ctx, raw)
	took := time.Since(start)
	if err != nil || res.Status == envelope.StatusRejected || res.Status == envelope.StatusAccepted {
		b.Fatalf("direct publish: %v %+v", err, res)
	}
	bd.cleanup(b, ev.ID)
	return took
}

// cleanup deletes an event's items with a client outside the call counter:
// minidyn's transactions slow down as a table grows, and a benchmark should
// measure a steady state, not table growth.
func (bd *bundle) cleanup(b *testing.B, id string) {
	ctx := context.Background()
	ddb := bd.env.Emulators.DynamoDB()
	for _, sk := range []string{dynamo.LedgerSK, dynamo.DispatchSK(topology.Billing)} {
		if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(bd.ingest.EventsTable),
			Key: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)},
				"sk": &ddbtypes.AttributeValueMemberS{Value: sk},
			},
		}); err != nil {
			b.Fatal(err)
		}
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
